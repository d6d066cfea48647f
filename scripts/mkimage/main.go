// Command mkimage puts a static bulkheadlab binary into a container image
// FROM scratch, without a Docker daemon (see internal/ociimage), and writes
// it as a tarball for `docker load` / `kind load image-archive`, as an OCI
// image layout, or pushes it to a registry. scripts/image.sh builds the
// binary and runs it; it is a program of its own so that the bulkheadlab
// binary does not carry the image code.
//
//	go run ./scripts/mkimage --binary PATH [--name REF] [--version V]
//	    [--revision SHA] [--source URL] [--platform linux/amd64]
//	    [--tar FILE] [--oci DIR] [--push [--insecure]]
//
// It prints the image's name, its digest (the manifest's, as a registry and
// the OCI layout know it) and its ID (the config's digest, which `docker
// images` shows after a load). SOURCE_DATE_EPOCH, when set, is the image's
// creation time; otherwise the Unix epoch, so the same binary gives the same
// digest.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/bulkheadlab/bulkheadlab/internal/ociimage"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError is an error in the flags, exit code 2.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("mkimage", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	binary := fs.String("binary", "", "the static Linux bulkheadlab binary (CGO_ENABLED=0) to put in the image (required)")
	ref := fs.String("name", "", `the image's name, [REGISTRY/]REPOSITORY[:TAG] (default "bulkheadlab:VERSION")`)
	version := fs.String("version", "dev", "the org.opencontainers.image.version label, and the default name's tag")
	revision := fs.String("revision", "", "the org.opencontainers.image.revision label (the commit)")
	source := fs.String("source", "", "the org.opencontainers.image.source label (the repository's URL)")
	platform := fs.String("platform", "", "os/arch[/variant] of the image (default: linux and the binary's architecture)")
	tarPath := fs.String("tar", "", "write the image as a tarball for docker load / kind load image-archive to this file")
	ociDir := fs.String("oci", "", "add the image to the OCI image layout in this folder")
	push := fs.Bool("push", false, "push the image to the registry of --name (credentials: the docker/podman config)")
	insecure := fs.Bool("insecure", false, "with --push: allow plain HTTP for a registry without TLS")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *binary == "" {
		return usagef("--binary is required: the static bulkheadlab binary to put in the image")
	}
	if *tarPath == "" && *ociDir == "" && !*push {
		return usagef("nothing to write: give --tar FILE, --oci DIR or --push")
	}
	if *insecure && !*push {
		return usagef("--insecure is for --push")
	}
	if *version == "" {
		return usagef("--version is empty")
	}
	if *ref == "" {
		*ref = "bulkheadlab:" + tagOf(*version)
	}
	if _, err := ociimage.Tag(*ref); err != nil {
		return usagef("--name: %v", err)
	}
	if *push && !namesRegistry(*ref) {
		return usagef("--push: --name %q names no registry, so it would go to Docker Hub; give one, e.g. localhost:5000/bulkheadlab:%s (or docker.io/USER/bulkheadlab to mean Docker Hub)", *ref, tagOf(*version))
	}
	var created time.Time
	if s := getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil || sec < 0 {
			return usagef("SOURCE_DATE_EPOCH %q is not a count of seconds since 1970", s)
		}
		created = time.Unix(sec, 0)
	}

	bin, err := os.ReadFile(*binary)
	if err != nil {
		return fmt.Errorf("--binary: %w", err)
	}
	img, err := ociimage.Build(bin, ociimage.Options{
		Platform: *platform,
		Version:  *version,
		Revision: *revision,
		Source:   *source,
		Created:  created,
	})
	if oe := (*ociimage.OptionError)(nil); errors.As(err, &oe) {
		return usagef("--%s %q: %v", strings.ToLower(oe.Field), oe.Value, oe.Err)
	} else if err != nil {
		return fmt.Errorf("--binary %s: %w", *binary, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	id, err := img.ConfigName()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "image   %s\ndigest  %s\nid      %s\n", *ref, digest, id)

	if *tarPath != "" {
		if err := ociimage.WriteTarball(img, *ref, *tarPath); err != nil {
			return fmt.Errorf("--tar: %w", err)
		}
		st, err := os.Stat(*tarPath)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "tarball %s (%d bytes)\n", *tarPath, st.Size())
	}
	if *ociDir != "" {
		if err := ociimage.WriteLayout(img, *ociDir, *ref); err != nil {
			return fmt.Errorf("--oci: %w", err)
		}
		fmt.Fprintf(stdout, "oci     %s\n", *ociDir)
	}
	if *push {
		d, err := ociimage.Push(ctx, img, *ref, ociimage.PushOptions{Insecure: *insecure})
		if err != nil {
			return fmt.Errorf("--push: %w", err)
		}
		fmt.Fprintf(stdout, "pushed  %s\n", d)
	}
	return nil
}

var notTagChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// tagOf makes a version a valid image tag: "+" and other characters a tag
// cannot hold become "-", a leading "." or "-" goes, at most 128 characters.
func tagOf(version string) string {
	t := strings.TrimLeft(notTagChars.ReplaceAllString(version, "-"), ".-")
	if len(t) > 128 {
		t = t[:128]
	}
	if t == "" {
		t = "latest"
	}
	return t
}

// namesRegistry reports whether ref starts with a registry host, by
// Docker's rule: a first path element with a "." or a ":", or "localhost".
func namesRegistry(ref string) bool {
	first, _, ok := strings.Cut(ref, "/")
	return ok && (strings.ContainsAny(first, ".:") || first == "localhost")
}
