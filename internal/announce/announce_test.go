package announce

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestRoundTripLeavesTheRestUnread(t *testing.T) {
	var b bytes.Buffer
	want := Announcement{Component: "proxy", Name: "A", Addr: "127.0.0.1:4000", Control: "127.0.0.1:4001", PID: 7}
	if err := Write(&b, want); err != nil {
		t.Fatal(err)
	}
	b.WriteString("log line 1\nlog line 2\n")
	got, err := Read(&b)
	if err != nil || got != want {
		t.Fatalf("Read = %+v, %v; want %+v", got, err, want)
	}
	rest, _ := io.ReadAll(&b)
	if string(rest) != "log line 1\nlog line 2\n" {
		t.Errorf("Read consumed past its line: rest %q", rest)
	}
}

func TestReadRejectsNonAnnouncements(t *testing.T) {
	for _, in := range []string{"", "hello\n", "{}\n", `{"component":"dep"}` + "\n", strings.Repeat("x", 500)} {
		if _, err := Read(strings.NewReader(in)); !errors.Is(err, ErrNoAnnouncement) {
			t.Errorf("Read(%.40q) error = %v, want ErrNoAnnouncement", in, err)
		}
	}
}

func FuzzRead(f *testing.F) {
	f.Add(`{"component":"service","addr":"127.0.0.1:1","pid":1}` + "\n")
	f.Add("garbage")
	f.Fuzz(func(t *testing.T, in string) {
		a, err := Read(strings.NewReader(in))
		if err == nil && a.Addr == "" {
			t.Errorf("Read(%q) accepted an announcement without an address", in)
		}
	})
}
