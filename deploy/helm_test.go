package deploy

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	"github.com/mindrouter/mindrouter/core/config"
)

// rendered is a chart's output: the objects by kind and name.
type rendered map[string]any

func renderChart(t *testing.T, valuesFile string) rendered {
	t.Helper()
	ch, err := loader.Load("helm/mindrouter")
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]any{}
	if valuesFile != "" {
		if vals, err = chartutil.ReadValuesFile(valuesFile); err != nil {
			t.Fatal(err)
		}
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion.Version, caps.KubeVersion.Major, caps.KubeVersion.Minor = "v1.31.0", "1", "31"
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: "mr", Namespace: "ai", IsInstall: true}, caps)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	objs := rendered{}
	for file, text := range out {
		if !strings.HasSuffix(file, ".yaml") {
			continue
		}
		for _, doc := range strings.Split(text, "\n---") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			kind, name, obj, err := decodeStrict([]byte(doc))
			if err != nil {
				t.Fatalf("%s: %v\n%s", file, err, doc)
			}
			objs[kind+"/"+name] = obj
		}
	}
	return objs
}

// decodeStrict decodes one manifest into its Kubernetes API type; an
// unknown or misplaced field is an error (what `kubectl apply` with
// server-side field validation would refuse).
func decodeStrict(doc []byte) (kind, name string, obj any, err error) {
	var meta struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return "", "", nil, err
	}
	switch meta.Kind {
	case "Deployment":
		obj = &appsv1.Deployment{}
	case "DaemonSet":
		obj = &appsv1.DaemonSet{}
	case "Service":
		obj = &corev1.Service{}
	case "ConfigMap":
		obj = &corev1.ConfigMap{}
	case "PodDisruptionBudget":
		obj = &policyv1.PodDisruptionBudget{}
	case "HorizontalPodAutoscaler":
		obj = &autoscalingv2.HorizontalPodAutoscaler{}
	case "NetworkPolicy":
		obj = &networkingv1.NetworkPolicy{}
	case "ServiceMonitor":
		obj = &monitoringv1.ServiceMonitor{}
	default:
		return "", "", nil, fmt.Errorf("unexpected kind %q", meta.Kind)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return "", "", nil, fmt.Errorf("%s %s: %w", meta.Kind, meta.Metadata.Name, err)
	}
	return meta.Kind, meta.Metadata.Name, obj, nil
}

// checkGatewayConfig parses the ConfigMap's mindrouter.yaml with the
// gateway's own loader, with the environment the Deployment gives it.
func checkGatewayConfig(t *testing.T, objs rendered) *config.Config {
	t.Helper()
	cm := objs["ConfigMap/mr-mindrouter"].(*corev1.ConfigMap)
	dep := objs["Deployment/mr-mindrouter"].(*appsv1.Deployment)
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			t.Setenv(e.Name, "test-"+strings.ToLower(e.Name))
		}
	}
	t.Setenv("MINDROUTER_STORE_DSN", "mindrouter:pw@tcp(db:3306)/mindrouter")
	cfg, err := config.Parse([]byte(cm.Data["mindrouter.yaml"]), "/etc/mindrouter")
	if err != nil {
		t.Fatalf("the gateway refuses the rendered config: %v\n%s", err, cm.Data["mindrouter.yaml"])
	}
	return cfg
}

func TestHelmChartDefaultValues(t *testing.T) {
	objs := renderChart(t, "")
	for _, want := range []string{"Deployment/mr-mindrouter", "Service/mr-mindrouter", "ConfigMap/mr-mindrouter", "PodDisruptionBudget/mr-mindrouter"} {
		if objs[want] == nil {
			t.Errorf("default values render no %s (have %v)", want, keys(objs))
		}
	}
	for _, absent := range []string{"HorizontalPodAutoscaler/mr-mindrouter", "ServiceMonitor/mr-mindrouter", "NetworkPolicy/mr-mindrouter", "DaemonSet/mr-mindrouter-sidecar"} {
		if objs[absent] != nil {
			t.Errorf("default values render %s, which is opt-in", absent)
		}
	}
	dep := objs["Deployment/mr-mindrouter"].(*appsv1.Deployment)
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas < 2 {
		t.Errorf("replicas = %v, want 2+", dep.Spec.Replicas)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("readiness probe: %+v", c.ReadinessProbe)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("liveness probe: %+v", c.LivenessProbe)
	}
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil || c.Lifecycle.PreStop.Sleep.Seconds <= 0 {
		t.Errorf("no preStop drain: %+v", c.Lifecycle)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources: %+v", c.Resources)
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("security context: %+v", sc)
	}
	refs := map[string]string{}
	for _, e := range c.Env {
		if e.Value != "" && strings.Contains(strings.ToLower(e.Name), "key") {
			t.Errorf("%s is a literal value, not a Secret reference", e.Name)
		}
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			refs[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
	}
	if refs["ADMIN_API_KEY"] == "" || refs["MINDROUTER_STORE_DSN"] == "" {
		t.Errorf("secret references: %v", refs)
	}
	cfg := checkGatewayConfig(t, objs)
	if cfg.Store.Driver != "mysql" || cfg.Redis.Addr == "" || cfg.Metrics.Listen == "" {
		t.Errorf("replicas must share a store and Redis, with metrics on their own port: %+v %+v %+v", cfg.Store, cfg.Redis, cfg.Metrics)
	}
}

func TestHelmChartProductionValues(t *testing.T) {
	objs := renderChart(t, filepath.Join("helm", "mindrouter", "production-values.yaml"))
	dep := objs["Deployment/mr-mindrouter"].(*appsv1.Deployment)
	if dep.Spec.Replicas != nil {
		t.Errorf("replicas set (%d) while the HPA owns them", *dep.Spec.Replicas)
	}
	hpa, ok := objs["HorizontalPodAutoscaler/mr-mindrouter"].(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok || hpa.Spec.MaxReplicas != 10 || hpa.Spec.ScaleTargetRef.Name != dep.Name {
		t.Errorf("hpa: %+v", hpa)
	}
	sm, ok := objs["ServiceMonitor/mr-mindrouter"].(*monitoringv1.ServiceMonitor)
	if !ok || len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || sm.Labels["release"] != "kube-prometheus-stack" {
		t.Errorf("service monitor: %+v", sm)
	}
	np, ok := objs["NetworkPolicy/mr-mindrouter"].(*networkingv1.NetworkPolicy)
	if !ok || len(np.Spec.Ingress) != 2 || len(np.Spec.Ingress[0].From) != 1 {
		t.Errorf("network policy: %+v", np)
	}
	ds, ok := objs["DaemonSet/mr-mindrouter-sidecar"].(*appsv1.DaemonSet)
	if !ok {
		t.Fatalf("no sidecar DaemonSet: %v", keys(objs))
	}
	ps := ds.Spec.Template.Spec
	if ps.RuntimeClassName == nil || *ps.RuntimeClassName != "nvidia" || ps.NodeSelector["nvidia.com/gpu.present"] != "true" || len(ps.Tolerations) == 0 {
		t.Errorf("sidecar placement: runtime %v selector %v tolerations %v", ps.RuntimeClassName, ps.NodeSelector, ps.Tolerations)
	}
	if img := dep.Spec.Template.Spec.Containers[0].Image; img != "registry.campus.example/mindrouter:1.0.0" {
		t.Errorf("image = %q", img)
	}
	cfg := checkGatewayConfig(t, objs)
	if len(cfg.Audit.ClickHouse.Addr) != 2 || cfg.Audit.ClickHouse.Password != "test-mindrouter_clickhouse_password" {
		t.Errorf("clickhouse: %+v", cfg.Audit.ClickHouse)
	}
	if cfg.Redis.Password != "test-mindrouter_redis_password" || len(cfg.Backends) != 2 || len(cfg.Nodes) != 2 {
		t.Errorf("redis %+v backends %d nodes %d", cfg.Redis, len(cfg.Backends), len(cfg.Nodes))
	}
}

// TestStrictDecodeRefusesUnknownFields keeps the check honest: a field
// Kubernetes does not know (a typo in a template) fails it.
func TestStrictDecodeRefusesUnknownFields(t *testing.T) {
	doc := []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replicaz: 2\n")
	if _, _, _, err := decodeStrict(doc); err == nil || !strings.Contains(err.Error(), "replicaz") {
		t.Fatalf("err = %v", err)
	}
	if _, _, _, err := decodeStrict(bytes.ReplaceAll(doc, []byte("replicaz"), []byte("replicas"))); err != nil {
		t.Fatalf("a valid Deployment refused: %v", err)
	}
}

func keys(m rendered) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
