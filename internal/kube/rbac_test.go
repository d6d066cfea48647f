//go:build kube

package kube_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/bulkheadlab/bulkheadlab/internal/kube"
)

// roleFile is the Role (and example RoleBinding) the documentation gives;
// patchRoleFile the optional one of --patch-env.
const (
	roleFile      = "../../docs/kubernetes/role.yaml"
	patchRoleFile = "../../docs/kubernetes/patch-env-role.yaml"
)

func loadRole(t *testing.T) (*rbacv1.Role, *rbacv1.RoleBinding) {
	t.Helper()
	return loadRoleFile(t, roleFile)
}

func loadRoleFile(t *testing.T, roleFile string) (*rbacv1.Role, *rbacv1.RoleBinding) {
	t.Helper()
	b, err := os.ReadFile(roleFile)
	if err != nil {
		t.Fatal(err)
	}
	docs := bytes.Split(b, []byte("\n---\n"))
	if len(docs) != 2 {
		t.Fatalf("%s: %d documents; want a Role and a RoleBinding", roleFile, len(docs))
	}
	var role rbacv1.Role
	var binding rbacv1.RoleBinding
	if err := yaml.UnmarshalStrict(docs[0], &role); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(docs[1], &binding); err != nil {
		t.Fatal(err)
	}
	if role.Kind != "Role" || binding.Kind != "RoleBinding" || binding.RoleRef.Name != role.Name {
		t.Fatalf("%s: a %s and a %s binding %s", roleFile, role.Kind, binding.Kind, binding.RoleRef.Name)
	}
	return &role, &binding
}

// bindAs creates role and binds it to the service account sa of c's
// namespace, and returns a Cluster that impersonates sa, once the API
// server's authorizer allows it to create Leases.
func bindAs(t *testing.T, c *kube.Cluster, role *rbacv1.Role, binding *rbacv1.RoleBinding, sa string) *kube.Cluster {
	t.Helper()
	ctx := timeout(t, 10*time.Second)
	role, binding = role.DeepCopy(), binding.DeepCopy()
	role.Name, binding.Name, binding.RoleRef.Name = sa, sa, sa
	binding.Subjects = []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: c.Namespace}}
	if _, err := c.Client.RbacV1().Roles(c.Namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.RbacV1().RoleBindings(c.Namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + c.Namespace + ":" + sa}
	as, err := kube.NewCluster(cfg, c.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	as.Identity = sa
	// the authorizer sees new roles a moment later
	for {
		if allowed(t, as, "create", "coordination.k8s.io", "leases", "") {
			return as
		}
		if ctx.Err() != nil {
			t.Fatal("the Role never took effect")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// allowed asks the API server whether c's user may verb the resource.
func allowed(t *testing.T, c *kube.Cluster, verb, group, resource, sub string) bool {
	t.Helper()
	r, err := c.Client.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(), &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: c.Namespace, Verb: verb, Group: group, Resource: resource, Subresource: sub,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Status.Allowed
}

// TestRBAC runs a whole run as a user bound to docs/kubernetes/role.yaml
// only, then shows that without one of its verbs the run fails.
func TestRBAC(t *testing.T) {
	_, admin := newCluster(t)
	role, binding := loadRole(t)
	c := bindAs(t, admin, role, binding, "bulkheadlab-runner")
	ctx := timeout(t, 30*time.Second)
	if !allowed(t, c, "get", "", "pods", "proxy") || !allowed(t, c, "create", "", "pods", "proxy") {
		t.Error("the Role does not allow pods/proxy get and create")
	}
	for _, verb := range []string{"list", "get", "delete", "watch"} {
		if allowed(t, c, verb, "", "secrets", "") {
			t.Errorf("the Role allows %s on secrets", verb)
		}
	}
	if allowed(t, c, "patch", "apps", "deployments", "") {
		t.Error("the Role allows patching every Deployment")
	}
	userDeployment(t, admin)
	// --patch-env's Role, for the user's Deployment "web" only
	prole, pbinding := loadRoleFile(t, patchRoleFile)
	if len(prole.Rules) != 1 || len(prole.Rules[0].ResourceNames) != 1 {
		t.Fatalf("%s: want one rule for one Deployment by name, got %+v", patchRoleFile, prole.Rules)
	}
	prole.Rules[0].ResourceNames = []string{"web"}
	prole.Name, pbinding.Name, pbinding.RoleRef.Name = "bulkheadlab-runner-patch", "bulkheadlab-runner-patch", "bulkheadlab-runner-patch"
	pbinding.Subjects = []rbacv1.Subject{{Kind: "ServiceAccount", Name: "bulkheadlab-runner", Namespace: admin.Namespace}}
	if _, err := admin.Client.RbacV1().Roles(admin.Namespace).Create(ctx, prole, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Client.RbacV1().RoleBindings(admin.Namespace).Create(ctx, pbinding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if _, err := c.Clean(ctx, false); err != nil {
		t.Fatal(err)
	}
	run, err := c.Create(ctx, testSpec("rbac", 2))
	if err != nil {
		t.Fatal(err)
	}
	if err := run.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	shards, err := run.ShardPods(ctx)
	if err != nil || len(shards) != 2 {
		t.Fatalf("ShardPods = %d, %v", len(shards), err)
	}
	if _, err := run.ProxyPods(ctx, "A"); err != nil {
		t.Fatal(err)
	}
	// through the pod proxy: authorized (the API server then refuses to
	// reach kwok's fake pod IP: "resolve_deny: denied destination"), while
	// a user without the Role is not
	if status, body := proxyGet(t, c, &shards[0]); status == http.StatusUnauthorized || strings.Contains(body, "cannot") {
		t.Errorf("GET through the pod proxy with the Role: %d %s", status, body)
	} else {
		t.Logf("GET through the pod proxy with the Role: %d %s", status, body)
	}
	cfg := rest.CopyConfig(admin.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + admin.Namespace + ":nobody"}
	nobody, err := kube.NewCluster(cfg, admin.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if status, body := proxyGet(t, nobody, &shards[0]); status != http.StatusForbidden || !strings.Contains(body, "cannot get resource") || !strings.Contains(body, "pods/proxy") {
		t.Errorf("GET through the pod proxy without the Role: %d %s; want RBAC's 403", status, body)
	}
	if err := run.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	restore, err := run.PatchEnv(ctx, "web", "", map[string]string{"A": run.ProxyURL("A")})
	if err != nil {
		t.Fatal(err)
	}
	if err := restore(ctx); err != nil {
		t.Fatal(err)
	}
	if err := run.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Clean(ctx, true); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, admin, "rbac")

	// without deletecollection on pods, Delete fails, Forbidden
	weaker := role.DeepCopy()
	for i, r := range weaker.Rules {
		if slices.Equal(r.Resources, []string{"pods"}) {
			weaker.Rules[i].Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == "deletecollection" })
		}
	}
	c2 := bindAs(t, admin, weaker, binding, "weaker")
	run, err = c2.Create(ctx, testSpec("weak", 1))
	if err != nil {
		t.Fatal(err)
	}
	err = run.Delete(ctx)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("Delete without pods deletecollection = %v; want Forbidden", err)
	}
	t.Log(err)
	if got, err := admin.Clean(ctx, true); err != nil || !slices.Equal(got, []string{"weak"}) {
		t.Fatalf("Clean = %v, %v", got, err)
	}
	assertNothingLeft(t, admin, "weak")
}

// proxyGet GETs /healthz on pod's port 7070 through c's pod proxy and
// returns the status and body (0 and the error when there is no answer
// within a second).
func proxyGet(t *testing.T, c *kube.Cluster, pod *corev1.Pod) (int, string) {
	t.Helper()
	base, rt, err := c.PodProxy(pod, 7070)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
