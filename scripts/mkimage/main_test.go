package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// staticBinary is a tiny static Linux amd64 program built for the tests.
var staticBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mkimage-test")
	if err != nil {
		log.Fatal(err)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		src := filepath.Join(dir, "main.go")
		if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
			log.Print(err)
			return 1
		}
		staticBinary = filepath.Join(dir, "tiny")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", staticBinary, src)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			log.Printf("building the test's static binary: %v\n%s", err, out)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

func noEnv(string) string { return "" }

func runMkimage(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, noEnv, &out, &errOut)
	return out.String(), err
}

// field returns the value after key on the output line starting with it.
func field(t *testing.T, out, key string) string {
	t.Helper()
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == key {
			return f[1]
		}
	}
	t.Fatalf("no %q line in the output:\n%s", key, out)
	return ""
}

func TestTarOCIAndPush(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	tarPath, ociDir := filepath.Join(dir, "img.tar"), filepath.Join(dir, "oci")
	ref := host + "/bulkheadlab:v0.1.0"

	out, err := runMkimage(t, "--binary", staticBinary, "--version", "v0.1.0", "--revision", "abc123", "--name", ref,
		"--tar", tarPath, "--oci", ociDir, "--push")
	if err != nil {
		t.Fatal(err)
	}
	digest := field(t, out, "digest")
	if got := field(t, out, "image"); got != ref {
		t.Errorf("image %s, want %s", got, ref)
	}
	if got, want := field(t, out, "pushed"), host+"/bulkheadlab@"+digest; got != want {
		t.Errorf("pushed %s, want %s", got, want)
	}
	if _, err := os.Stat(filepath.Join(ociDir, "index.json")); err != nil {
		t.Error(err)
	}

	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Image(tag)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := pulled.Digest(); d.String() != digest {
		t.Errorf("pulled %s, printed %s", d, digest)
	}
	loaded, err := tarball.ImageFromPath(tarPath, &tag)
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := loaded.ConfigName(); id.String() != field(t, out, "id") {
		t.Errorf("the tarball's image ID %s, printed %s", id, field(t, out, "id"))
	}
	cf, err := loaded.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.Labels["org.opencontainers.image.revision"] != "abc123" {
		t.Errorf("labels %v, want the revision abc123", cf.Config.Labels)
	}

	// The default name is bulkheadlab:VERSION, and the digest is the same
	// for the same binary and labels.
	again, err := runMkimage(t, "--binary", staticBinary, "--version", "v0.1.0", "--revision", "abc123", "--tar", tarPath)
	if err != nil {
		t.Fatal(err)
	}
	if field(t, again, "image") != "bulkheadlab:v0.1.0" || field(t, again, "digest") != digest {
		t.Errorf("a second run:\n%s\nwant bulkheadlab:v0.1.0 with the digest %s", again, digest)
	}
}

func TestSourceDateEpoch(t *testing.T) {
	tarPath := filepath.Join(t.TempDir(), "img.tar")
	var a, b bytes.Buffer
	if err := run(context.Background(), []string{"--binary", staticBinary, "--tar", tarPath}, noEnv, &a, io.Discard); err != nil {
		t.Fatal(err)
	}
	env := func(k string) string {
		if k == "SOURCE_DATE_EPOCH" {
			return "1700000000"
		}
		return ""
	}
	if err := run(context.Background(), []string{"--binary", staticBinary, "--tar", tarPath}, env, &b, io.Discard); err != nil {
		t.Fatal(err)
	}
	if field(t, a.String(), "digest") == field(t, b.String(), "digest") {
		t.Error("SOURCE_DATE_EPOCH did not change the image")
	}
	tag, _ := name.NewTag("bulkheadlab:dev")
	img, err := tarball.ImageFromPath(tarPath, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Created.Unix() != 1700000000 {
		t.Errorf("created %v, want SOURCE_DATE_EPOCH's", cf.Created)
	}
}

func TestBadFlags(t *testing.T) {
	dir := t.TempDir()
	tarPath := filepath.Join(dir, "img.tar")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tar", tarPath}, "--binary is required"},
		{[]string{"--binary", filepath.Join(dir, "missing"), "--tar", tarPath}, "--binary: open "},
		{[]string{"--binary", "main.go", "--tar", tarPath}, "--binary main.go: not a Linux executable"},
		{[]string{"--binary", staticBinary}, "give --tar FILE, --oci DIR or --push"},
		{[]string{"--binary", staticBinary, "--tar", tarPath, "--name", "Bulkheadlab:v1"}, `--name: image name "Bulkheadlab:v1"`},
		{[]string{"--binary", staticBinary, "--tar", tarPath, "--name", "bulkheadlab:v1:v2"}, `--name: image name "bulkheadlab:v1:v2"`},
		{[]string{"--binary", staticBinary, "--push"}, `--push: --name "bulkheadlab:dev" names no registry`},
		{[]string{"--binary", staticBinary, "--tar", tarPath, "--insecure"}, "--insecure is for --push"},
		{[]string{"--binary", staticBinary, "--tar", tarPath, "--platform", "linux/arm64"}, `--platform "linux/arm64": the binary is built for amd64`},
		{[]string{"--binary", staticBinary, "--tar", tarPath, "--version", ""}, "--version is empty"},
		{[]string{"--binary", staticBinary, "--tar", tarPath, "extra"}, `unexpected argument "extra"`},
		{[]string{"--bogus"}, "unknown flag: --bogus"},
	} {
		t.Run(c.want, func(t *testing.T) {
			_, err := runMkimage(t, c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if !strings.HasPrefix(c.want, "--binary ") && !strings.HasPrefix(c.want, "--binary:") {
				var ue usageError
				if !errors.As(err, &ue) {
					t.Errorf("%v is not a usage error (exit code 2)", err)
				}
			}
		})
	}
	if _, err := os.Stat(tarPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused run wrote the tarball: %v", err)
	}
	env := func(string) string { return "yesterday" }
	if err := run(context.Background(), []string{"--binary", staticBinary, "--tar", tarPath}, env, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "SOURCE_DATE_EPOCH") {
		t.Errorf("a bad SOURCE_DATE_EPOCH: error %v", err)
	}
}

func TestTagOf(t *testing.T) {
	for in, want := range map[string]string{
		"dev":                      "dev",
		"v0.3.0":                   "v0.3.0",
		"v0.3.0-5-g41262b7-dirty":  "v0.3.0-5-g41262b7-dirty",
		"v1.0.0+incompatible":      "v1.0.0-incompatible",
		".hidden":                  "hidden",
		"+++":                      "latest",
		strings.Repeat("a", 200):   strings.Repeat("a", 128),
		"feature/branch name@head": "feature-branch-name-head",
	} {
		if got := tagOf(in); got != want {
			t.Errorf("tagOf(%q) = %q, want %q", in, got, want)
		}
		if _, err := name.NewTag("bulkheadlab:" + tagOf(in)); err != nil {
			t.Errorf("tagOf(%q) = %q is not a valid tag: %v", in, tagOf(in), err)
		}
	}
}
