package releasemanager

import "github.com/medium/picchu/controllers"

// RemoteEvents carries changes seen in remote clusters' caches (their
// ReplicaSets) to the ReleaseManager controller's queue.
type RemoteEvents = controllers.Notifications

// NewRemoteEvents returns a source with nothing pending.
func NewRemoteEvents() *RemoteEvents { return controllers.NewNotifications("remote ReplicaSets") }
