package kit

import (
	"context"
	"fmt"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Update reads obj again, applies change to it and writes it back,
// reading again and retrying when the write conflicts. Tests change
// objects the operator writes too (a Cluster's or a Mirror's status); a
// plain read-then-write loses that race now and then.
func Update[T client.Object](ctx context.Context, c client.Client, obj T, change func(T)) error {
	key := client.ObjectKeyFromObject(obj)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, key, obj); err != nil {
			return err
		}
		change(obj)
		return c.Update(ctx, obj)
	})
	if err != nil {
		return fmt.Errorf("updating %T %s: %w", obj, key, err)
	}
	return nil
}
