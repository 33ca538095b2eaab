package chartcheck

import (
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// kinds are the kinds the chart may render, by apiVersion and kind, each
// with a constructor of its Go type.
var kinds = map[string]func() any{
	"v1/ConfigMap":                            func() any { return &corev1.ConfigMap{} },
	"v1/Secret":                               func() any { return &corev1.Secret{} },
	"v1/Service":                              func() any { return &corev1.Service{} },
	"v1/ServiceAccount":                       func() any { return &corev1.ServiceAccount{} },
	"v1/Pod":                                  func() any { return &corev1.Pod{} },
	"apps/v1/Deployment":                      func() any { return &appsv1.Deployment{} },
	"policy/v1/PodDisruptionBudget":           func() any { return &policyv1.PodDisruptionBudget{} },
	"networking.k8s.io/v1/NetworkPolicy":      func() any { return &networkingv1.NetworkPolicy{} },
	"networking.k8s.io/v1/Ingress":            func() any { return &networkingv1.Ingress{} },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any { return &monitoringv1.ServiceMonitor{} },
	"monitoring.coreos.com/v1/PrometheusRule": func() any { return &monitoringv1.PrometheusRule{} },
	"keda.sh/v1alpha1/ScaledObject":           func() any { return &ScaledObject{} },
}

// Decode reads m strictly into its kind's Go type: a field the type does not
// have, a field given twice or a value of the wrong type (a quantity that
// does not parse, a string for a number) is an error.
func Decode(m Manifest) (any, error) {
	newObject, ok := kinds[m.APIVersion+"/"+m.Kind]
	if !ok {
		return nil, fmt.Errorf("%s: %s %s is not a kind these checks know (add its Go type to kinds)", m.Where(), m.APIVersion, m.Kind)
	}
	obj := newObject()
	if err := yaml.UnmarshalStrict(m.YAML, obj); err != nil {
		return nil, fmt.Errorf("%s: %w", m.Where(), err)
	}
	return obj, nil
}

// DecodeAll decodes every manifest, failing at the first that does not
// decode.
func DecodeAll(ms []Manifest) ([]any, error) {
	out := make([]any, len(ms))
	for i, m := range ms {
		obj, err := Decode(m)
		if err != nil {
			return nil, err
		}
		out[i] = obj
	}
	return out, nil
}

// ScaledObject is KEDA's ScaledObject (keda.sh/v1alpha1), field for field as
// KEDA 2's apis/keda/v1alpha1 declares it (scaledobject_types.go,
// scaletriggers_types.go), status left out: KEDA's module, which holds
// every scaler, is too large to import for one type.
type ScaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ScaledObjectSpec `json:"spec"`
}

// ScaledObjectSpec is KEDA's ScaledObjectSpec.
type ScaledObjectSpec struct {
	ScaleTargetRef        *ScaleTarget    `json:"scaleTargetRef"`
	PollingInterval       *int32          `json:"pollingInterval,omitempty"`
	InitialCooldownPeriod *int32          `json:"initialCooldownPeriod,omitempty"`
	CooldownPeriod        *int32          `json:"cooldownPeriod,omitempty"`
	IdleReplicaCount      *int32          `json:"idleReplicaCount,omitempty"`
	MinReplicaCount       *int32          `json:"minReplicaCount,omitempty"`
	MaxReplicaCount       *int32          `json:"maxReplicaCount,omitempty"`
	Advanced              *AdvancedConfig `json:"advanced,omitempty"`
	Triggers              []ScaleTriggers `json:"triggers"`
	Fallback              *Fallback       `json:"fallback,omitempty"`
}

// ScaleTarget is KEDA's ScaleTarget.
type ScaleTarget struct {
	Name                   string `json:"name"`
	APIVersion             string `json:"apiVersion,omitempty"`
	Kind                   string `json:"kind,omitempty"`
	EnvSourceContainerName string `json:"envSourceContainerName,omitempty"`
}

// AdvancedConfig is KEDA's AdvancedConfig.
type AdvancedConfig struct {
	HorizontalPodAutoscalerConfig *HorizontalPodAutoscalerConfig `json:"horizontalPodAutoscalerConfig,omitempty"`
	RestoreToOriginalReplicaCount bool                           `json:"restoreToOriginalReplicaCount,omitempty"`
	ScalingModifiers              ScalingModifiers               `json:"scalingModifiers,omitempty"`
}

// HorizontalPodAutoscalerConfig is KEDA's HorizontalPodAutoscalerConfig.
type HorizontalPodAutoscalerConfig struct {
	Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
	Name     string                                         `json:"name,omitempty"`
}

// ScalingModifiers is KEDA's ScalingModifiers.
type ScalingModifiers struct {
	Formula          string                         `json:"formula,omitempty"`
	Target           string                         `json:"target,omitempty"`
	ActivationTarget string                         `json:"activationTarget,omitempty"`
	MetricType       autoscalingv2.MetricTargetType `json:"metricType,omitempty"`
}

// Fallback is KEDA's Fallback.
type Fallback struct {
	FailureThreshold int32  `json:"failureThreshold"`
	Replicas         int32  `json:"replicas"`
	Behavior         string `json:"behavior,omitempty"`
}

// ScaleTriggers is KEDA's ScaleTriggers: one scaler, its metadata the
// scaler's own settings.
type ScaleTriggers struct {
	Type              string                         `json:"type"`
	Name              string                         `json:"name,omitempty"`
	UseCachedMetrics  bool                           `json:"useCachedMetrics,omitempty"`
	Metadata          map[string]string              `json:"metadata"`
	AuthenticationRef *AuthenticationRef             `json:"authenticationRef,omitempty"`
	MetricType        autoscalingv2.MetricTargetType `json:"metricType,omitempty"`
}

// AuthenticationRef is KEDA's AuthenticationRef.
type AuthenticationRef struct {
	Name string `json:"name"`
	Kind string `json:"kind,omitempty"`
}
