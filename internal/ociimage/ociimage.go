// Package ociimage puts a static bulkheadlab binary into a minimal container
// image, FROM scratch, without a Docker daemon: one layer holding the binary
// at /bulkheadlab, run as an unprivileged user. The image can be written as
// a tarball that `docker load` and `kind load image-archive` read, as an OCI
// image layout, or pushed to a registry. It uses go-containerregistry for
// the image formats and the registry protocol.
//
// The same binary and Options give the same image digest: the file's times
// and the image's creation time are Options.Created (the Unix epoch by
// default), never the clock.
package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/match"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/bulkheadlab/bulkheadlab/internal/atomicfile"
)

const (
	// Path is where the binary lies in the image, and the entrypoint.
	Path = "/bulkheadlab"
	// UID and GID own the binary and run it: the conventional "nonroot"
	// user of distroless images, which needs no /etc/passwd.
	UID = 65532
	GID = 65532
	// User is the image's user, numeric so that no passwd file is needed
	// and a Kubernetes runAsNonRoot check can verify it.
	User = "65532:65532"
)

// Label keys set on every image.
const (
	LabelTitle    = "org.opencontainers.image.title"
	LabelSource   = "org.opencontainers.image.source"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
)

// Options describe the image around the binary.
type Options struct {
	// Platform is "os/arch" or "os/arch/variant", e.g. "linux/amd64". The
	// os must be linux and the arch must be the binary's. Empty: linux and
	// the architecture the binary was built for (its ELF header's).
	Platform string
	// Version is the org.opencontainers.image.version label. Required.
	Version string
	// Revision (the commit) and Source (the repository's URL) are the
	// org.opencontainers.image.revision and .source labels, left out when
	// empty.
	Revision string
	Source   string
	// Title is the org.opencontainers.image.title label; "bulkheadlab"
	// when empty.
	Title string
	// Created is the image's creation time and the binary's modification
	// time in the layer. Zero: the Unix epoch, so that the digest depends
	// only on the binary and the options.
	Created time.Time
}

// OptionError is Build's error for a field of Options.
type OptionError struct {
	Field string // "Platform", "Version"
	Value string
	Err   error
}

func (e *OptionError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("Options.%s %v", e.Field, e.Err)
	}
	return fmt.Sprintf("Options.%s %q: %v", e.Field, e.Value, e.Err)
}

func (e *OptionError) Unwrap() error { return e.Err }

// BuildFile reads the binary at path and builds its image (see Build).
func BuildFile(path string, opts Options) (v1.Image, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("binary: %w", err)
	}
	img, err := Build(b, opts)
	var oe *OptionError
	if err != nil && !errors.As(err, &oe) {
		return nil, fmt.Errorf("binary %s: %w", path, err)
	}
	return img, err
}

// Build returns the image of a static Linux binary: one layer with the
// binary at /bulkheadlab (mode 0755, owned by 65532:65532), the entrypoint
// ["/bulkheadlab"], user 65532:65532, working directory /, and the OCI
// labels of opts. It refuses what could not run FROM scratch: a file that is
// not an ELF executable, a dynamically linked one (its loader and libraries
// are not in the image), or one for another architecture than
// opts.Platform's.
func Build(binary []byte, opts Options) (v1.Image, error) {
	if opts.Version == "" {
		return nil, &OptionError{Field: "Version", Err: errors.New("empty: the image's version label is required")}
	}
	arch, err := elfArch(binary)
	if err != nil {
		return nil, err
	}
	plat := v1.Platform{OS: "linux", Architecture: arch}
	if opts.Platform != "" {
		p, err := v1.ParsePlatform(opts.Platform)
		if err != nil {
			return nil, &OptionError{Field: "Platform", Value: opts.Platform, Err: err}
		}
		if p.OS != "linux" {
			return nil, &OptionError{Field: "Platform", Value: opts.Platform, Err: errors.New("the os must be linux, the binary is a Linux ELF file")}
		}
		if p.Architecture != arch {
			return nil, &OptionError{Field: "Platform", Value: opts.Platform, Err: fmt.Errorf("the binary is built for %s, not %s", arch, p.Architecture)}
		}
		plat = *p
	}
	created := opts.Created
	if created.IsZero() {
		created = time.Unix(0, 0)
	}
	created = created.UTC().Truncate(time.Second)

	layer, err := binaryLayer(binary, created)
	if err != nil {
		return nil, err
	}

	title := opts.Title
	if title == "" {
		title = "bulkheadlab"
	}
	labels := map[string]string{LabelTitle: title, LabelVersion: opts.Version}
	if opts.Revision != "" {
		labels[LabelRevision] = opts.Revision
	}
	if opts.Source != "" {
		labels[LabelSource] = opts.Source
	}
	cfg := &v1.ConfigFile{
		Architecture: plat.Architecture,
		OS:           plat.OS,
		OSVersion:    plat.OSVersion,
		OSFeatures:   plat.OSFeatures,
		Variant:      plat.Variant,
		Created:      v1.Time{Time: created},
		Config: v1.Config{
			Entrypoint: []string{Path},
			User:       User,
			WorkingDir: "/",
			// The entrypoint is an absolute path and the binary runs
			// nothing else, so nothing depends on PATH; "/" only lets a
			// command given as the bare name "bulkheadlab" (a pod's
			// command:) resolve to the one program there is.
			Env:    []string{"PATH=/"},
			Labels: labels,
		},
		RootFS: v1.RootFS{Type: "layers"},
	}

	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	return mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "ociimage: COPY bulkheadlab " + Path,
			Comment:   "static binary, FROM scratch",
		},
	})
}

// binaryLayer is the gzipped tar of one file, the binary at Path, whose
// bytes depend only on the binary and the time.
func binaryLayer(binary []byte, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     Path[1:],
		Mode:     0o755,
		Uid:      UID,
		Gid:      GID,
		Size:     int64(len(binary)),
		ModTime:  mtime,
		Format:   tar.FormatUSTAR,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(binary); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	tarBytes := buf.Bytes()
	return tarball.LayerFromOpener(
		func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(tarBytes)), nil },
		// The default level: for a Go binary within 1% of the best one's
		// size, in less than half its time.
		tarball.WithCompressionLevel(gzip.DefaultCompression),
		tarball.WithMediaType(types.OCILayer),
		tarball.WithCompressedCaching,
	)
}

// elfArch returns the GOARCH a static Linux ELF executable was built for,
// or an error saying why the file cannot run in an image without a libc.
func elfArch(binary []byte) (string, error) {
	f, err := elf.NewFile(bytes.NewReader(binary))
	if err != nil {
		return "", fmt.Errorf("not a Linux executable (ELF): %w", err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return "", fmt.Errorf("not an executable: ELF type %s", f.Type)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", fmt.Errorf("dynamically linked (it needs a loader and libraries that an image FROM scratch does not have): build it with CGO_ENABLED=0")
		}
	}
	little := f.ByteOrder.String() == "LittleEndian"
	is64 := f.Class == elf.ELFCLASS64
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64", nil
	case elf.EM_386:
		return "386", nil
	case elf.EM_AARCH64:
		return "arm64", nil
	case elf.EM_ARM:
		return "arm", nil
	case elf.EM_PPC64:
		if little {
			return "ppc64le", nil
		}
		return "ppc64", nil
	case elf.EM_S390:
		return "s390x", nil
	case elf.EM_RISCV:
		if is64 {
			return "riscv64", nil
		}
	case elf.EM_LOONGARCH:
		return "loong64", nil
	case elf.EM_MIPS:
		switch {
		case is64 && little:
			return "mips64le", nil
		case is64:
			return "mips64", nil
		case little:
			return "mipsle", nil
		default:
			return "mips", nil
		}
	}
	return "", fmt.Errorf("ELF machine %s (%s) is not a Go linux architecture", f.Machine, f.Class)
}

// Tag parses an image name for a tarball or a layout: a repository with an
// optional registry and tag ("bulkheadlab:v1", "localhost:5000/bulkheadlab");
// the tag defaults to "latest".
func Tag(ref string) (name.Tag, error) {
	t, err := name.NewTag(ref)
	if err != nil {
		return name.Tag{}, fmt.Errorf("image name %q: %w", ref, err)
	}
	return t, nil
}

// WriteTarball writes img, tagged ref, to path as a tarball in the format of
// `docker save`, which `docker load`, `kind load image-archive`,
// `minikube image load` and `podman load` read. The file is replaced
// atomically.
func WriteTarball(img v1.Image, ref, path string) error {
	tag, err := Tag(ref)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := tarball.Write(tag, img, &buf); err != nil {
		return fmt.Errorf("image tarball %s: %w", path, err)
	}
	return atomicfile.WriteFile(path, buf.Bytes())
}

// AnnotationRefName is the OCI layout's annotation naming an image in
// index.json, the tag (as `skopeo copy oci:DIR:TAG` expects).
const AnnotationRefName = "org.opencontainers.image.ref.name"

// WriteLayout adds img to the OCI image layout in dir, creating it when
// missing. With ref non-empty the image is annotated with ref's tag and
// replaces an image of the same tag already there.
func WriteLayout(img v1.Image, dir, ref string) error {
	var opts []layout.Option
	var tag string
	if ref != "" {
		t, err := Tag(ref)
		if err != nil {
			return err
		}
		tag = t.TagStr()
		opts = append(opts, layout.WithAnnotations(map[string]string{AnnotationRefName: tag}))
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "index.json")); !os.IsNotExist(serr) {
			return fmt.Errorf("OCI layout %s: %w", dir, err)
		}
		if p, err = layout.Write(dir, empty.Index); err != nil {
			return fmt.Errorf("OCI layout %s: %w", dir, err)
		}
	}
	if tag != "" {
		err = p.ReplaceImage(img, match.Annotation(AnnotationRefName, tag), opts...)
	} else {
		err = p.AppendImage(img, opts...)
	}
	if err != nil {
		return fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	return nil
}

// PushOptions tune Push.
type PushOptions struct {
	// Insecure allows plain HTTP (and falls back to it) for a registry
	// that does not serve HTTPS, e.g. a local one on a cluster's node.
	// Registries on localhost, loopback and private addresses get plain
	// HTTP without it.
	Insecure bool
	// Keychain finds credentials; nil is authn.DefaultKeychain (the
	// docker/podman config files and their credential helpers).
	Keychain authn.Keychain
	// Transport carries the requests; nil is go-containerregistry's
	// default.
	Transport http.RoundTripper
}

// Push uploads img to the registry of ref (a tag or a digest reference) and
// returns the image's reference by digest there.
func Push(ctx context.Context, img v1.Image, ref string, opts PushOptions) (name.Digest, error) {
	var nopts []name.Option
	if opts.Insecure {
		nopts = append(nopts, name.Insecure)
	}
	r, err := name.ParseReference(ref, nopts...)
	if err != nil {
		return name.Digest{}, fmt.Errorf("image name %q: %w", ref, err)
	}
	kc := opts.Keychain
	if kc == nil {
		kc = authn.DefaultKeychain
	}
	ropts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(kc), remote.WithUserAgent("bulkheadlab-ociimage")}
	if opts.Transport != nil {
		ropts = append(ropts, remote.WithTransport(opts.Transport))
	}
	if err := remote.Write(r, img, ropts...); err != nil {
		return name.Digest{}, fmt.Errorf("push %s: %w", r, err)
	}
	d, err := img.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	return r.Context().Digest(d.String()), nil
}
