package pgproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Put replaces the faults of the PostgreSQL proxy whose control API is at base
// ("http://host:port" or "host:port") with fs, through PUT /faults; a nil
// hc means http.DefaultClient. A 400's message is in the error, which then
// wraps ErrInvalidFault.
func Put(ctx context.Context, hc *http.Client, base string, fs []Fault) error {
	if hc == nil {
		hc = http.DefaultClient
	}
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	if fs == nil {
		fs = []Fault{}
	}
	body, err := json.Marshal(map[string][]Fault{"faults": fs})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, strings.TrimRight(base, "/")+"/faults", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	switch {
	case res.StatusCode == http.StatusOK:
		return nil
	case res.StatusCode == http.StatusBadRequest:
		return fmt.Errorf("pgproxy control: %w: %s", ErrInvalidFault, bytes.TrimSpace(msg))
	}
	return fmt.Errorf("pgproxy control: %s: %s", res.Status, bytes.TrimSpace(msg))
}
