//go:build kube

package kubetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// kwok's annotation on the nodes it manages.
const (
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
	kwokNodeValue      = "fake"
)

var stageGVR = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "stages"}

// neverReadyStage makes a pod labelled NeverReadyLabel Running with an
// IP, its containers running but not ready: as a pod whose readiness
// probe fails. (kwok's pod-ready Stage is installed with a selector that
// leaves these pods out.)
const neverReadyStage = `
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: kubetest-pod-never-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.metadata.labels["` + NeverReadyLabel + `"]'
      operator: 'Exists'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Pending'
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        type: Ready
        reason: ContainersNotReady
        message: 'readiness probe failed (kubetest: labelled ` + NeverReadyLabel + `)'
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        type: ContainersReady
        reason: ContainersNotReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: true
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      {{ $podIPs := PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
      {{ with $podIPs }}
      podIP: {{ index . 0 | Quote }}
      podIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      phase: Running
      startTime: {{ $now | Quote }}
`

// stages loads kwok's Stages the cluster uses: from kwok's
// kustomize/stage, node-initialize (nodes become Ready), pod-ready from
// the fast set (a pod on a fake node becomes Running and Ready at once,
// with an IP), its selector made to leave out the pods labelled
// NeverReadyLabel, and pod-delete (a deleted pod goes away); plus
// neverReadyStage. kwok's pod-complete is left out: it would finish the
// Job's pods as soon as they run.
func stages(data string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, f := range []string{"node/fast/node-initialize.yaml", "pod/fast/pod-ready.yaml", "pod/fast/pod-delete.yaml"} {
		b, err := os.ReadFile(filepath.Join(data, "stage", f))
		if err != nil {
			return nil, err
		}
		u, err := decode(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if u.GetName() == "pod-ready" {
			exprs, _, _ := unstructured.NestedSlice(u.Object, "spec", "selector", "matchExpressions")
			exprs = append(exprs, map[string]any{
				"key":      `.metadata.labels["` + NeverReadyLabel + `"]`,
				"operator": "DoesNotExist",
			})
			if err := unstructured.SetNestedSlice(u.Object, exprs, "spec", "selector", "matchExpressions"); err != nil {
				return nil, err
			}
		}
		out = append(out, u)
	}
	u, err := decode([]byte(neverReadyStage))
	if err != nil {
		return nil, err
	}
	return append(out, u), nil
}

func decode(b []byte) (*unstructured.Unstructured, error) {
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// startKwok creates the Stages and starts kwok against the API server.
func (c *Cluster) startKwok(ctx context.Context, b Binaries) error {
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	ss, err := stages(b.Data)
	if err != nil {
		return fmt.Errorf("kubetest: kwok's stages: %w", err)
	}
	for _, s := range ss {
		if _, err := dyn.Resource(stageGVR).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("kubetest: creating Stage %s: %w", s.GetName(), err)
		}
	}
	kubeconfig := filepath.Join(c.dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, c.kubeconfig, 0o600); err != nil {
		return err
	}
	config := filepath.Join(c.dir, "kwok.yaml")
	if err := os.WriteFile(config, []byte("# none: kwok's defaults\n"), 0o600); err != nil {
		return err
	}
	logPath := filepath.Join(c.dir, "kwok.log")
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(b.Kwok,
		"--kubeconfig="+kubeconfig,
		// a configuration file of its own, empty: the defaults (not ~/.kwok's)
		"--config="+config,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+kwokNodeAnnotation+"="+kwokNodeValue,
		"--enable-crds=Stage",
		"--cidr=10.244.0.0/16",
		"--node-ip=10.96.0.1",
	)
	cmd.Stdout = log
	cmd.Stderr = log
	// kwok dies with the test binary, even when that is killed
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("kubetest: starting kwok: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(exited)
	}()
	c.stops = append(c.stops, func() error {
		_ = cmd.Process.Kill()
		<-exited
		return nil
	})
	c.kwokLog = logPath
	c.kwokExited = exited
	return nil
}

// addNodes creates n fake nodes and waits until kwok made them Ready.
func (c *Cluster) addNodes(ctx context.Context, n int) error {
	for i := range n {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:        fmt.Sprintf("kwok-node-%d", i),
			Annotations: map[string]string{kwokNodeAnnotation: kwokNodeValue},
			Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": fmt.Sprintf("kwok-node-%d", i)},
		}}
		if _, err := c.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("kubetest: creating Node: %w", err)
		}
		c.Nodes = append(c.Nodes, node.Name)
	}
	wait := 20 * time.Millisecond
	for {
		ready := 0
		for _, name := range c.Nodes {
			node, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if ready == len(c.Nodes) {
			return nil
		}
		select {
		case <-c.kwokExited:
			return fmt.Errorf("kubetest: kwok exited: %s", c.kwokTail())
		case <-ctx.Done():
			return fmt.Errorf("kubetest: kwok did not make the nodes Ready: %w; kwok's log: %s", ctx.Err(), c.kwokTail())
		case <-time.After(wait):
		}
		wait = min(wait*2, 500*time.Millisecond)
	}
}

// kwokTail is the end of kwok's log.
func (c *Cluster) kwokTail() string {
	b, _ := os.ReadFile(c.kwokLog)
	s := string(b)
	if len(s) > 4000 {
		s = s[len(s)-4000:]
	}
	return strings.TrimSpace(s)
}
