// Package slack sends release notifications (failures and rollbacks) to a
// configured Slack channel.
package slack
