package slack

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TokenKey is the data key of the bot token in its Secret.
const TokenKey = "token"

// SecretToken reads the bot token from the Secret at each call, through
// reader (the manager's cache): a Secret created after the operator
// started, or rotated, works without a restart.
func SecretToken(reader client.Reader, secret types.NamespacedName) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		s := &corev1.Secret{}
		if err := reader.Get(ctx, secret, s); err != nil {
			return "", fmt.Errorf("reading Secret %s: %w", secret, err)
		}
		token := string(s.Data[TokenKey])
		if token == "" {
			return "", fmt.Errorf("secret %s has no %q", secret, TokenKey)
		}
		return token, nil
	}
}
