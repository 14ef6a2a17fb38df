package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// resourceName is how the plugin names a Revision, as kubectl does.
const resourceName = "revision.picchu.medium.engineering/"

func (r *runner) newPauseCommand() *cobra.Command {
	var tag string
	cmd := &cobra.Command{
		Use:   "pause APP",
		Short: "Pause the release of an app's newest build",
		Long: `Pause the release of an app's newest build.

The build keeps the traffic it has in every target: no step up is taken and
its canary's timer stops until it is resumed. A failure, an abort or a
rollback still proceeds. The build is the newest Revision of the app that
is not failed, or the one of --tag; the pause is the annotation
picchu.medium.engineering/pause on it, set to the time of the pause.`,
		Example: `  # Pause the newest build of app demo
  kubectl picchu pause demo

  # Pause build v2 of app demo
  kubectl picchu pause demo --tag v2`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.control(cmd.Context(), args[0], func(s *session, a *app) error {
				return r.pause(cmd.Context(), s, a, tag)
			})
		},
	}
	addTagFlag(cmd, &tag, "the build to pause (the newest that is not failed by default)")
	return cmd
}

func (r *runner) newResumeCommand() *cobra.Command {
	var tag string
	cmd := &cobra.Command{
		Use:   "resume APP",
		Short: "Resume the paused builds of an app",
		Long: `Resume the paused builds of an app.

Remove the annotation picchu.medium.engineering/pause from every Revision of
the app that has it, or from the one of --tag: their releases go on where
they stopped.`,
		Example: `  # Resume every paused build of app demo
  kubectl picchu resume demo

  # Resume build v2 of app demo only
  kubectl picchu resume demo --tag v2`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.control(cmd.Context(), args[0], func(s *session, a *app) error {
				return r.resume(cmd.Context(), s, a, tag)
			})
		},
	}
	addTagFlag(cmd, &tag, "the build to resume (every paused build by default)")
	return cmd
}

func (r *runner) newPromoteCommand() *cobra.Command {
	var tag string
	var full bool
	cmd := &cobra.Command{
		Use:   "promote APP",
		Short: "Move an app's newest build on now",
		Long: `Move an app's newest build on now.

In each target, end its canary, start a release waiting on its schedule, or
take the next step of its ramp without waiting out the step delay; with
--full, then ramp straight to its release.max. Each step still waits for the
capacity it needs. The build is the newest Revision of the app that is not
failed, or the one of --tag; the request is the annotation
picchu.medium.engineering/promote on it.`,
		Example: `  # Take the next step of app demo's newest build now
  kubectl picchu promote demo

  # Release build v2 of app demo fully, now
  kubectl picchu promote demo --tag v2 --full`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.control(cmd.Context(), args[0], func(s *session, a *app) error {
				return r.promote(cmd.Context(), s, a, tag, full)
			})
		},
	}
	addTagFlag(cmd, &tag, "the build to promote (the newest that is not failed by default)")
	cmd.Flags().BoolVar(&full, "full", false, "Ramp straight to release.max rather than take one step.")
	return cmd
}

func (r *runner) newAbortCommand() *cobra.Command {
	var tag, reason string
	cmd := &cobra.Command{
		Use:   "abort APP --reason REASON",
		Short: "Fail an app's newest build, putting its traffic back on the previous release",
		Long: `Fail an app's newest build, putting its traffic back on the previous release.

Set spec.failed on the newest Revision of the app that is not failed, or on
the one of --tag, with "aborted: REASON" in its annotation
picchu.medium.engineering/failed-reason. Picchu gives its traffic back to the
previous release in every target and retires it. kubectl picchu retry undoes
it.`,
		Example: `  # Abort the newest build of app demo
  kubectl picchu abort demo --reason "p99 latency doubled"

  # Abort build v3 of app demo
  kubectl picchu abort demo --tag v3 --reason "bad migration"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if reason == "" {
				return errNoReason
			}
			return r.control(cmd.Context(), args[0], func(s *session, a *app) error {
				return r.abort(cmd.Context(), s, a, tag, reason)
			})
		},
	}
	addTagFlag(cmd, &tag, "the build to abort (the newest that is not failed by default)")
	cmd.Flags().StringVar(&reason, "reason", "", "Why the build is aborted (required).")
	return cmd
}

func (r *runner) newRetryCommand() *cobra.Command {
	var tag string
	cmd := &cobra.Command{
		Use:   "retry APP",
		Short: "Clear the failure of an app's newest failed build, so it is released again",
		Long: `Clear the failure of an app's newest failed build, so it is released again.

Unset spec.failed on the newest failed Revision of the app, or on the one of
--tag, and remove its failed-reason and failed-at-timestamp annotations.
Each target records the failure it cleared in its ReleaseManager
(status.revisions[].retries) and deploys, canaries and releases the build
again.`,
		Example: `  # Retry the newest failed build of app demo
  kubectl picchu retry demo

  # Retry build v3 of app demo
  kubectl picchu retry demo --tag v3`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.control(cmd.Context(), args[0], func(s *session, a *app) error {
				return r.retry(cmd.Context(), s, a, tag)
			})
		},
	}
	addTagFlag(cmd, &tag, "the build to retry (the newest failed one by default)")
	return cmd
}

func (r *runner) newRollbackCommand() *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "rollback APP --to TAG",
		Short: "Roll an app back to an earlier build",
		Long: `Roll an app back to an earlier build.

Build TAG is brought back and released at once in every target, ramping
straight to its release.max, and every build of the app created after it
loses its eligibility and retires. The request is the annotation
picchu.medium.engineering/rollback on TAG's Revision, set to the time of the
request; the newest request of an app wins. A failed build cannot be rolled
back to: retry it first.

Picchu orders the request by when its webhook received it (the annotation
picchu.medium.engineering/rollback-at), not by this machine's clock: the
command warns when the two differ by more than a minute, or when no webhook
stamped the request (Picchu then goes by this machine's clock, and ignores a
request that would roll nothing back or whose time is ahead of its own).`,
		Example: `  # Roll app demo back to build v1
  kubectl picchu rollback demo --to v1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return errNoTo
			}
			return r.control(cmd.Context(), args[0], func(s *session, a *app) error {
				return r.rollback(cmd.Context(), s, a, to)
			})
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "The tag of the build to roll back to (required).")
	return cmd
}

// The actions, shared by the commands and the dashboard: each changes the
// app's Revisions with the session's client (the user's own rights) and
// prints what it changed on r.Out, as kubectl does.

var (
	errNoReason = errors.New("abort needs --reason: say why the build is aborted (it is kept in the failed-reason annotation)")
	errNoTo     = errors.New("rollback needs --to: the tag of the build to roll back to")
)

// pause pauses the build of tag, or the newest that is not failed.
func (r *runner) pause(ctx context.Context, s *session, a *app, tag string) error {
	rev, err := pick(a, tag, false)
	if err != nil {
		return err
	}
	if _, ok := rev.Annotations[picchuv1alpha1.AnnotationPause]; ok {
		return fmt.Errorf("%s%s is already paused (kubectl picchu resume %s)", resourceName, rev.Name, a.name)
	}
	return r.patch(ctx, s, rev, "paused", func(rev *picchuv1alpha1.Revision) {
		rev.Annotations[picchuv1alpha1.AnnotationPause] = r.Now().UTC().Format(time.RFC3339)
	})
}

// resume resumes the build of tag, or every paused build.
func (r *runner) resume(ctx context.Context, s *session, a *app, tag string) error {
	var paused []*picchuv1alpha1.Revision
	for i := range a.revisions {
		rev := &a.revisions[i]
		if _, ok := rev.Annotations[picchuv1alpha1.AnnotationPause]; ok && (tag == "" || rev.Spec.App.Tag == tag) {
			paused = append(paused, rev)
		}
	}
	if len(paused) == 0 {
		if tag != "" {
			return fmt.Errorf("build %q of app %q is not paused", tag, a.name)
		}
		return fmt.Errorf("no build of app %q is paused", a.name)
	}
	for _, rev := range paused {
		if err := r.patch(ctx, s, rev, "resumed", func(rev *picchuv1alpha1.Revision) {
			delete(rev.Annotations, picchuv1alpha1.AnnotationPause)
		}); err != nil {
			return err
		}
	}
	return nil
}

// promote moves the build of tag, or the newest that is not failed, on
// now: one step, or to its release.max when full.
func (r *runner) promote(ctx context.Context, s *session, a *app, tag string, full bool) error {
	rev, err := pick(a, tag, false)
	if err != nil {
		return err
	}
	done := "promoted"
	if full {
		done = "promoted (full)"
	}
	return r.patch(ctx, s, rev, done, func(rev *picchuv1alpha1.Revision) {
		rev.Annotations[picchuv1alpha1.AnnotationPromote] = picchuv1alpha1.PromoteRequest(full, r.Now())
	})
}

// abort fails the build of tag, or the newest that is not failed, for reason.
func (r *runner) abort(ctx context.Context, s *session, a *app, tag, reason string) error {
	if reason == "" {
		return errNoReason
	}
	rev, err := pick(a, tag, false)
	if err != nil {
		return err
	}
	return r.patch(ctx, s, rev, "aborted", func(rev *picchuv1alpha1.Revision) {
		rev.Spec.Failed = true
		rev.Annotations[picchuv1alpha1.AnnotationFailedReason] = "aborted: " + reason
		// failed-at-timestamp marks Picchu's own failures: an abort
		// leaves it out, so Picchu tells it as an abort.
		delete(rev.Annotations, picchuv1alpha1.AnnotationFailedAt)
	})
}

// retry clears the failure of the build of tag, or the newest failed one.
func (r *runner) retry(ctx context.Context, s *session, a *app, tag string) error {
	rev, err := pick(a, tag, true)
	if err != nil {
		return err
	}
	return r.patch(ctx, s, rev, "retried", func(rev *picchuv1alpha1.Revision) {
		rev.Spec.Failed = false
		delete(rev.Annotations, picchuv1alpha1.AnnotationFailedReason)
		delete(rev.Annotations, picchuv1alpha1.AnnotationFailedAt)
	})
}

// rollback asks Picchu to roll the app back to the build of tag to.
func (r *runner) rollback(ctx context.Context, s *session, a *app, to string) error {
	if to == "" {
		return errNoTo
	}
	rev := a.revision(to)
	if rev == nil {
		return fmt.Errorf("app %q has no build with tag %q", a.name, to)
	}
	if rev.Spec.Failed {
		return fmt.Errorf("%s%s (tag %s) is failed: retry it first (kubectl picchu retry %s --tag %s)", resourceName, rev.Name, to, a.name, to)
	}
	said := r.Now()
	if err := r.patch(ctx, s, rev, "rollback requested", func(rev *picchuv1alpha1.Revision) {
		rev.Annotations[picchuv1alpha1.AnnotationRollback] = picchuv1alpha1.RollbackRequest(said)
	}); err != nil {
		return err
	}
	if w := receivedWarning(said, rev.Annotations[picchuv1alpha1.AnnotationRollbackAt]); w != "" {
		_, err := fmt.Fprintln(r.ErrOut, "Warning: "+w)
		return err
	}
	return nil
}

func addTagFlag(cmd *cobra.Command, tag *string, usage string) {
	cmd.Flags().StringVar(tag, "tag", "", "The tag of "+usage+".")
}

// control connects, reads the app and runs act on it.
func (r *runner) control(ctx context.Context, name string, act func(*session, *app) error) error {
	s, err := r.connect()
	if err != nil {
		return err
	}
	a, err := s.loadApp(ctx, name)
	if err != nil {
		return err
	}
	return act(s, a)
}

// pick is the Revision an action applies to: the one of tag, or the newest
// that is failed (for a retry) or not (for any other action).
func pick(a *app, tag string, failed bool) (*picchuv1alpha1.Revision, error) {
	if tag != "" {
		rev := a.revision(tag)
		switch {
		case rev == nil:
			return nil, fmt.Errorf("app %q has no build with tag %q", a.name, tag)
		case failed && !rev.Spec.Failed:
			return nil, fmt.Errorf("%s%s (tag %s) is not failed: there is nothing to retry", resourceName, rev.Name, tag)
		case !failed && rev.Spec.Failed:
			return nil, fmt.Errorf("%s%s (tag %s) is failed: retry it first (kubectl picchu retry %s --tag %s)", resourceName, rev.Name, tag, a.name, tag)
		}
		return rev, nil
	}
	for i, rev := range slices.Backward(a.revisions) {
		if rev.Spec.Failed == failed {
			return &a.revisions[i], nil
		}
	}
	if failed {
		return nil, fmt.Errorf("app %q has no failed build: there is nothing to retry", a.name)
	}
	return nil, fmt.Errorf("app %q has no build that is not failed", a.name)
}

// patch changes rev with change, records who made it, and says done.
func (r *runner) patch(ctx context.Context, s *session, rev *picchuv1alpha1.Revision, done string, change func(*picchuv1alpha1.Revision)) error {
	user, err := r.WhoAmI(ctx, s.config)
	if err == nil && user == "" {
		err = errors.New("no user name")
	}
	if err != nil {
		user = "unknown"
		fmt.Fprintf(r.ErrOut, "Warning: recording the change as made by %q: %s\n", user, cell(err.Error()))
	}
	before := rev.DeepCopy()
	if rev.Annotations == nil {
		rev.Annotations = map[string]string{}
	}
	change(rev)
	rev.Annotations[picchuv1alpha1.AnnotationControlBy] = user
	if err := s.client.Patch(ctx, rev, client.MergeFrom(before), client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("patching %s%s in namespace %q: %w", resourceName, rev.Name, s.namespace, err)
	}
	_, err = fmt.Fprintf(r.Out, "%s%s %s\n", resourceName, cell(rev.Name), done)
	return err
}

// receivedWarning says what to warn of a rollback request this machine
// said was made at said, which the webhook stamped received (its
// rollback-at annotation, "" when none did): no stamp, or a stamp more than
// MaxControlSkew away from said (this machine's clock is off).
func receivedWarning(said time.Time, received string) string {
	if received == "" {
		return fmt.Sprintf("no webhook stamped when the request was received: Picchu orders it by this machine's clock (%s), "+
			"and ignores it if no newer build was created before that time, or if that time is ahead of its own",
			said.UTC().Format(time.RFC3339))
	}
	at, ok := picchuv1alpha1.ParseRollbackRequest(received)
	if !ok {
		return fmt.Sprintf("the request's received time %q is not a time", received)
	}
	off := said.Sub(at)
	switch {
	case off > picchuv1alpha1.MaxControlSkew:
		return fmt.Sprintf("this machine's clock is %s ahead of Picchu's: the request is ordered by when Picchu received it, %s",
			off.Round(time.Second), at.UTC().Format(time.RFC3339))
	case off < -picchuv1alpha1.MaxControlSkew:
		return fmt.Sprintf("this machine's clock is %s behind Picchu's: the request is ordered by when Picchu received it, %s",
			(-off).Round(time.Second), at.UTC().Format(time.RFC3339))
	}
	return ""
}
