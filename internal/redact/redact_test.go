package redact

import (
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"--upstream postgres://app:pw@db:5432/x: no user", "--upstream postgres://app:xxxxx@db:5432/x: no user"},
		{`target "http://u:s3cr%40t@10.0.0.1/a"`, `target "http://u:xxxxx@10.0.0.1/a"`},
		{"http://user@host/ has no password", "http://user@host/ has no password"},
		{"mail me at a@b.c", "mail me at a@b.c"},
		{"env: [DATABASE_URL=postgres://a:b@h/db, PGPASSWORD=hunter2]", "env: [DATABASE_URL=postgres://a:xxxxx@h/db, PGPASSWORD=xxxxx]"},
		{"dsn: host=db user=app password=hunter2 dbname=x", "dsn: host=db user=app password=xxxxx dbname=x"},
		{`{"password": "hunter2", "user": "a"}`, `{"password": "xxxxx", "user": "a"}`},
		{"password: 'hunter 2'\nnext: 1", "password: 'xxxxx'\nnext: 1"},
		{"no secrets here", "no secrets here"},
	} {
		got := Text(tc.in)
		if got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if Text(got) != got {
			t.Errorf("Text(%q) is not stable: %q", got, Text(got))
		}
		if (got != tc.in) != Masked(got) {
			t.Errorf("Masked(%q) = %v", got, Masked(got))
		}
	}
	if got := URL("https://u:pw@example.org/x"); got != "https://u:xxxxx@example.org/x" {
		t.Errorf("URL = %q", got)
	}
}

// FuzzText: a password put in a URL's user-info never survives.
func FuzzText(f *testing.F) {
	f.Add("prefix ", "app", "hunter2secret", "db:5432/x")
	f.Fuzz(func(t *testing.T, pre, user, pw, rest string) {
		if len(pw) < 8 || strings.ContainsAny(pw, "\x00 \t\n\r/'\"`@") || strings.ContainsAny(user, ":@/ \t\n\r'\"`") {
			return
		}
		in := pre + " postgres://" + user + ":" + pw + "@" + rest
		if out := Text(in); strings.Contains(out, ":"+pw+"@") {
			t.Fatalf("Text(%q) = %q keeps the password", in, out)
		}
	})
}
