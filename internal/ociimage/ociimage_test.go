package ociimage

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// staticBinary is a small real static Linux binary built once for the
// package's tests (CGO_ENABLED=0, GOOS=linux, GOARCH=amd64), and its bytes.
var (
	staticBinary     string
	staticBinaryData []byte
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ociimage-test")
	if err != nil {
		log.Fatal(err)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		if err := buildStatic(dir); err != nil {
			log.Print(err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

func buildStatic(dir string) error {
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() { println(\"hello from the image\") }\n"), 0o644); err != nil {
		return err
	}
	staticBinary = filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", staticBinary, src)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the test's static binary: %v\n%s", err, out)
	}
	var err error
	staticBinaryData, err = os.ReadFile(staticBinary)
	return err
}

func testOptions() Options {
	return Options{Version: "v1.2.3", Revision: "0123456789abcdef", Source: "https://example.test/bulkheadlab"}
}

// image is the image of the test binary with testOptions, built once: the
// layer's compression is most of a build's time, more so under -race.
var image = sync.OnceValues(func() (v1.Image, error) { return BuildFile(staticBinary, testOptions()) })

func sharedImage(t *testing.T) v1.Image {
	t.Helper()
	img, err := image()
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func build(t *testing.T, opts Options) v1.Image {
	t.Helper()
	img, err := BuildFile(staticBinary, opts)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func digest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// checkImage checks what an image read back must hold: the config and the
// one layer with the binary.
func checkImage(t *testing.T, img v1.Image) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if len(c.Entrypoint) != 1 || c.Entrypoint[0] != "/bulkheadlab" {
		t.Errorf("entrypoint %q, want [/bulkheadlab]", c.Entrypoint)
	}
	if c.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", c.User)
	}
	if c.WorkingDir != "/" {
		t.Errorf("working dir %q, want /", c.WorkingDir)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("platform %s/%s, want linux/amd64", cf.OS, cf.Architecture)
	}
	want := map[string]string{LabelTitle: "bulkheadlab", LabelVersion: "v1.2.3", LabelRevision: "0123456789abcdef", LabelSource: "https://example.test/bulkheadlab"}
	for k, v := range want {
		if c.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
		}
	}
	if !cf.Created.Time.Equal(time.Unix(0, 0)) {
		t.Errorf("created %v, want the Unix epoch", cf.Created.Time)
	}

	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	if hdr.Name != "bulkheadlab" || hdr.Typeflag != tar.TypeReg {
		t.Errorf("layer entry %q (type %c), want the regular file bulkheadlab", hdr.Name, hdr.Typeflag)
	}
	if hdr.Mode != 0o755 || hdr.Uid != 65532 || hdr.Gid != 65532 {
		t.Errorf("mode %o owner %d:%d, want 755 65532:65532", hdr.Mode, hdr.Uid, hdr.Gid)
	}
	if !hdr.ModTime.Equal(time.Unix(0, 0)) {
		t.Errorf("mtime %v, want the Unix epoch", hdr.ModTime)
	}
	got, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, staticBinaryData) {
		t.Errorf("the layer's file (%d bytes) differs from the binary (%d bytes)", len(got), len(staticBinaryData))
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("the layer holds more than the binary: %v", err)
	}
}

func TestTarballRoundTrip(t *testing.T) {
	img := sharedImage(t)
	path := filepath.Join(t.TempDir(), "image.tar")
	if err := WriteTarball(img, "bulkheadlab:v1.2.3", path); err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag("bulkheadlab:v1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	back, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatal(err)
	}
	checkImage(t, back)
	// docker save's format keeps the config and the layers but not the
	// manifest (a reader makes its own), so what is the same read back is
	// the image ID (the config's digest) and the layer's digest.
	for _, f := range []func(v1.Image) (v1.Hash, error){
		v1.Image.ConfigName,
		func(i v1.Image) (v1.Hash, error) {
			ls, err := i.Layers()
			if err != nil {
				return v1.Hash{}, err
			}
			return ls[0].Digest()
		},
	} {
		got, err := f(back)
		if err != nil {
			t.Fatal(err)
		}
		want, err := f(img)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("read back %s, built %s", got, want)
		}
	}

	// The tarball is docker save's format: manifest.json names the tag.
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(path) })
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || len(m[0].RepoTags) != 1 || m[0].RepoTags[0] != "bulkheadlab:v1.2.3" {
		t.Errorf("manifest.json %+v, want one image tagged bulkheadlab:v1.2.3", m)
	}
}

func TestReproducibleDigest(t *testing.T) {
	a, b := sharedImage(t), build(t, testOptions())
	if digest(t, a) != digest(t, b) {
		t.Errorf("two builds of the same binary: %s and %s", digest(t, a), digest(t, b))
	}
	other := testOptions()
	other.Version = "v1.2.4"
	if digest(t, build(t, other)) == digest(t, a) {
		t.Error("another version label gave the same digest")
	}
	then := testOptions()
	then.Created = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	if digest(t, build(t, then)) == digest(t, a) {
		t.Error("another creation time gave the same digest")
	}
}

func TestLayout(t *testing.T) {
	img := sharedImage(t)
	dir := filepath.Join(t.TempDir(), "oci")
	for range 2 { // the second write replaces the image of the same tag
		if err := WriteLayout(img, dir, "bulkheadlab:v1.2.3"); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("index.json lists %d images, want 1", len(im.Manifests))
	}
	desc := im.Manifests[0]
	if desc.Annotations[AnnotationRefName] != "v1.2.3" {
		t.Errorf("ref name annotation %q, want v1.2.3", desc.Annotations[AnnotationRefName])
	}
	if desc.Digest != digest(t, img) {
		t.Errorf("layout digest %s, built %s", desc.Digest, digest(t, img))
	}
	back, err := idx.Image(desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	checkImage(t, back)
}

func TestPushInProcessRegistry(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img := sharedImage(t)

	ref := host + "/bulkheadlab:v1.2.3"
	got, err := Push(context.Background(), img, ref, PushOptions{Keychain: authn.NewMultiKeychain()})
	if err != nil {
		t.Fatal(err)
	}
	if got.DigestStr() != digest(t, img).String() || got.Context().String() != host+"/bulkheadlab" {
		t.Errorf("Push returned %s, want %s/bulkheadlab@%s", got, host, digest(t, img))
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	back, err := remote.Image(tag)
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, back) != digest(t, img) {
		t.Errorf("pulled %s, pushed %s", digest(t, back), digest(t, img))
	}
	checkImage(t, back)
}

// TestPushInsecure pushes to a registry whose name is not a loopback one, so
// that only Insecure allows plain HTTP; the transport dials the in-process
// registry whatever the name.
func TestPushInsecure(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	defer tr.CloseIdleConnections()
	img := sharedImage(t)
	ref := "registry.bulkheadlab.test/bulkheadlab:v1.2.3"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	if _, err := Push(ctx, img, ref, PushOptions{Transport: tr, Keychain: authn.NewMultiKeychain()}); err == nil || !strings.Contains(err.Error(), "https://") {
		t.Fatalf("a push without Insecure: error %v, want a failed HTTPS request", err)
	}
	got, err := Push(ctx, img, ref, PushOptions{Insecure: true, Transport: tr, Keychain: authn.NewMultiKeychain()})
	if err != nil {
		t.Fatal(err)
	}
	if got.DigestStr() != digest(t, img).String() {
		t.Errorf("Push returned %s, want the digest %s", got, digest(t, img))
	}
}

func TestBadInput(t *testing.T) {
	img := sharedImage(t)
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		err  func() error
		want string
	}{
		{"missing binary", func() error {
			_, err := BuildFile(filepath.Join(dir, "nope"), testOptions())
			return err
		}, "binary: open "},
		{"not ELF", func() error {
			_, err := Build([]byte("#!/bin/sh\necho hi\n"), testOptions())
			return err
		}, "not a Linux executable"},
		{"no version", func() error {
			_, err := BuildFile(staticBinary, Options{})
			return err
		}, "Options.Version"},
		{"bad platform", func() error {
			_, err := BuildFile(staticBinary, Options{Version: "v1", Platform: "linux/arm64"})
			return err
		}, `Options.Platform "linux/arm64": the binary is built for amd64`},
		{"not linux", func() error {
			_, err := BuildFile(staticBinary, Options{Version: "v1", Platform: "windows/amd64"})
			return err
		}, "the os must be linux"},
		{"bad tarball name", func() error {
			return WriteTarball(img, "Bulkheadlab:v1", filepath.Join(dir, "x.tar"))
		}, `image name "Bulkheadlab:v1"`},
		{"bad layout name", func() error {
			return WriteLayout(img, filepath.Join(dir, "oci"), "bulkheadlab:v1:v2")
		}, `image name "bulkheadlab:v1:v2"`},
		{"bad push name", func() error {
			_, err := Push(context.Background(), img, "bulk headlab", PushOptions{})
			return err
		}, `image name "bulk headlab"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.err()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "x.tar")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused tarball was written: %v", err)
	}
}

// TestDynamicBinaryRefused tries a dynamically linked program of the
// machine (one with a PT_INTERP loader), when it has one.
func TestDynamicBinaryRefused(t *testing.T) {
	for _, p := range []string{"/bin/sh", "/usr/bin/env", "/bin/ls"} {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		dynamic := false
		for _, prog := range f.Progs {
			dynamic = dynamic || prog.Type == elf.PT_INTERP
		}
		f.Close()
		if !dynamic {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Build(b, testOptions()); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
			t.Errorf("%s: error %v, want dynamically linked", p, err)
		}
		return
	}
	t.Skip("no dynamically linked program to try")
}
