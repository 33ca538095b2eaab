package chartcheck

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// Pod is a pod the chart can make: a Deployment's pod template or a Pod
// (the test).
type Pod struct {
	Where string
	// Owner is the object: its labels say the component.
	Owner metav1.ObjectMeta
	Meta  metav1.ObjectMeta
	Spec  corev1.PodSpec
}

// Pods returns every pod spec among the decoded objects.
func Pods(objs []any) []Pod {
	var out []Pod
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			out = append(out, Pod{Where: "Deployment " + o.Name, Owner: o.ObjectMeta, Meta: o.Spec.Template.ObjectMeta, Spec: o.Spec.Template.Spec})
		case *corev1.Pod:
			out = append(out, Pod{Where: "Pod " + o.Name, Owner: o.ObjectMeta, Meta: o.ObjectMeta, Spec: o.Spec})
		}
	}
	return out
}

// restricted evaluates pods as the Pod Security admission controller of a
// namespace labelled pod-security.kubernetes.io/enforce=restricted does,
// at the latest version of the standard.
var restricted = func() policy.Evaluator {
	e, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		panic(fmt.Sprintf("the Pod Security Standards' checks: %v", err))
	}
	return e
}()

// Restricted says what keeps p from the Pod Security Standard "restricted"
// (non-root, no privilege escalation, every capability dropped, seccomp
// RuntimeDefault, only ephemeral and projected volumes, ...), and, beyond
// the standard, any container whose root file system is writable or that
// is handed a service account token it does not need. nil: p passes.
func Restricted(p Pod) error {
	lv := psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}
	var errs []error
	for _, r := range restricted.EvaluatePod(lv, &p.Meta, &p.Spec) {
		if !r.Allowed {
			errs = append(errs, fmt.Errorf("restricted: %s (%s)", r.ForbiddenReason, r.ForbiddenDetail))
		}
	}
	for _, c := range allContainers(p.Spec) {
		if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			errs = append(errs, fmt.Errorf("container %s: root file system not read-only (securityContext.readOnlyRootFilesystem)", c.Name))
		}
	}
	if a := p.Spec.AutomountServiceAccountToken; a == nil || *a {
		errs = append(errs, fmt.Errorf("a service account token is mounted (automountServiceAccountToken), though nothing calls the Kubernetes API"))
	}
	return errorsOf(p.Where, errs)
}

// allContainers are the pod's init and regular containers.
func allContainers(spec corev1.PodSpec) []corev1.Container {
	return append(append([]corev1.Container(nil), spec.InitContainers...), spec.Containers...)
}
