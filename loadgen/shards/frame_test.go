package shards

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

// TestFrames: frames written are read back in order; a cut stream or an
// unknown type is an ErrBadFrame, a clean end between frames io.EOF.
func TestFrames(t *testing.T) {
	var b bytes.Buffer
	for _, f := range []struct {
		typ byte
		p   string
	}{{frameBatch, "abc"}, {frameReport, ""}, {frameError, "boom"}} {
		if err := writeFrame(&b, f.typ, []byte(f.p)); err != nil {
			t.Fatal(err)
		}
	}
	whole := b.Bytes()
	r := bufio.NewReader(bytes.NewReader(whole))
	var got []string
	for {
		typ, p, err := readFrame(r, nil)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(typ)+string(p))
	}
	if want := []string{"Babc", "R", "Eboom"}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("frames %q, want %q", got, want)
	}
	for cut := 1; cut < len(whole); cut++ {
		r := bufio.NewReader(bytes.NewReader(whole[:cut]))
		var err error
		for err == nil {
			_, _, err = readFrame(r, nil)
		}
		if at := []int{5, 7}; err == io.EOF && cut != at[0] && cut != at[1] {
			t.Errorf("cut at %d: clean end", cut)
		}
	}
	if _, _, err := readFrame(bufio.NewReader(bytes.NewReader([]byte{'X', 0})), nil); !errors.Is(err, ErrBadFrame) {
		t.Errorf("unknown type: %v", err)
	}
	if _, _, err := readFrame(bufio.NewReader(bytes.NewReader([]byte{'B', 0xff, 0xff, 0xff, 0xff, 0x0f})), nil); !errors.Is(err, ErrBadFrame) {
		t.Errorf("a huge length: %v", err)
	}
}

func FuzzReadFrame(f *testing.F) {
	var b bytes.Buffer
	_ = writeFrame(&b, frameBatch, []byte("abc"))
	_ = writeFrame(&b, frameReport, []byte(`{"sent":[1]}`))
	f.Add(b.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReader(bytes.NewReader(data))
		var buf []byte
		for range 64 {
			typ, p, err := readFrame(r, buf)
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrBadFrame) {
					t.Fatalf("error %v is neither io.EOF nor ErrBadFrame", err)
				}
				return
			}
			if typ != frameBatch && typ != frameReport && typ != frameError || len(p) > MaxFrame {
				t.Fatalf("frame %q of %d bytes", typ, len(p))
			}
			buf = p[:0]
		}
	})
}
