package v1alpha1

// ReleaseManagerName is the name of the ReleaseManager of an app in a
// target, in the delivery cluster.
func ReleaseManagerName(app, target string) string { return app + "-" + target }

// AppNamespace is the namespace of an app in a target on every cluster of
// the target's fleet. It is the ReleaseManager's name: two apps whose names
// collide would share both, which admission refuses (see Collisions).
func AppNamespace(app, target string) string { return ReleaseManagerName(app, target) }
