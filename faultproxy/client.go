package faultproxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy/internal/control"
)

// APIError is a non-2xx answer of the control API. For a 400 it carries the
// server's message and errors.Is(err, ErrInvalidFault) is true.
type APIError struct {
	StatusCode int
	Message    string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("faultproxy control: %d %s: %s", e.StatusCode, http.StatusText(e.StatusCode), e.Message)
}

// Is matches ErrInvalidFault for a 400.
func (e *APIError) Is(target error) bool {
	return target == ErrInvalidFault && e.StatusCode == http.StatusBadRequest
}

// Client talks to a proxy's control API. Safe for concurrent use.
type Client struct {
	base string
	hc   *http.Client
}

// NewClient returns a client of the control API at baseURL ("http://host:port"
// or just "host:port"). A nil hc means a client with a 10 s timeout.
func NewClient(baseURL string, hc *http.Client) *Client {
	if !strings.Contains(baseURL, "://") {
		baseURL = "http://" + baseURL
	}
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), hc: hc}
}

// Get returns the proxy's current faults.
func (c *Client) Get(ctx context.Context) ([]Fault, error) {
	return c.do(ctx, http.MethodGet, nil)
}

// Set replaces the proxy's faults with fs. Invalid faults are refused
// before any request, with the same errors as the server's.
func (c *Client) Set(ctx context.Context, fs []Fault) error {
	if err := ValidateFaults(fs); err != nil {
		return err
	}
	body, err := marshalFaults(fs)
	if err != nil {
		return fmt.Errorf("faultproxy control: encoding faults: %w", err)
	}
	_, err = c.do(ctx, http.MethodPut, body)
	return err
}

// Clear removes every fault.
func (c *Client) Clear(ctx context.Context) error {
	_, err := c.do(ctx, http.MethodDelete, nil)
	return err
}

func (c *Client) do(ctx context.Context, method string, body []byte) ([]Fault, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+"/faults", rd)
	if err != nil {
		return nil, fmt.Errorf("faultproxy control: %w", err)
	}
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json") // a command must say so (see internal/ctlauth)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("faultproxy control: %s /faults: %w", method, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxControlBody))
	if err != nil {
		return nil, fmt.Errorf("faultproxy control: reading answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &APIError{StatusCode: resp.StatusCode, Message: control.ErrorMessage(b)}
	}
	fs, err := ParseFaults(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("faultproxy control: decoding answer: %w", err)
	}
	return fs, nil
}
