package service

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ErrBodyTooLarge is wrapped by the error of a dependency call whose body is
// longer than Config.MaxBodyBytes: the call fails (502, X-Dependency-Error:
// error) rather than relay or decode a truncated body.
var ErrBodyTooLarge = errors.New("dependency body exceeds max_body_bytes")

// decodeBuckets are the upper bounds, in seconds, of the decode-time
// histogram: 50 µs to 1 s.
var decodeBuckets = []float64{50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1}

// decodeMetrics are the service's JSON-decoding metrics, by dependency
// (labelled with the calling endpoint's name, like the dependency calls).
type decodeMetrics struct {
	seconds *prometheus.HistogramVec
	bytes   *prometheus.CounterVec
}

func newDecodeMetrics() decodeMetrics {
	return decodeMetrics{
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "bulkheadlab_dependency_decode_seconds",
			Help:    "Time spent decoding dependencies' JSON bodies (encoding/json into a generic value), by dependency.",
			Buckets: decodeBuckets,
		}, []string{"dependency"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bulkheadlab_dependency_decoded_bytes_total",
			Help: "Bytes of dependencies' JSON bodies decoded, by dependency.",
		}, []string{"dependency"}),
	}
}

func (m decodeMetrics) register(r prometheus.Registerer, endpoints []string) {
	r.MustRegister(m.seconds, m.bytes)
	for _, e := range endpoints { // export zeros from the start
		m.seconds.WithLabelValues(e)
		m.bytes.WithLabelValues(e)
	}
}

// isJSON reports whether a Content-Type names JSON (application/json or a
// +json type).
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// decodeJSON decodes body with encoding/json into a generic value, as a
// service that reads its dependency's answer does, and returns how many
// elements its top level holds (an array's length, an object's keys, 1 for
// a scalar).
func decodeJSON(body []byte) (int, error) {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return 0, err
	}
	switch x := v.(type) {
	case []any:
		return len(x), nil
	case map[string]any:
		return len(x), nil
	}
	return 1, nil
}

// decoded replaces the body of a successful call whose body is JSON by a
// small summary of it ({"dependency":…,"items":N,"bytes":M}), after
// decoding it; the decode time is observed, and a body that is not valid
// JSON makes the call an error. Other results are returned as they are.
func (d *dependency) decoded(res callResult) callResult {
	if res.outcome != outcomeOK || !isJSON(res.contentType) {
		return res
	}
	start := time.Now()
	n, err := decodeJSON(res.body)
	res.decodeTime = time.Since(start)
	d.decodeTime.Observe(res.decodeTime.Seconds())
	d.decodedBytes.Add(float64(len(res.body)))
	if err != nil {
		return callResult{outcome: outcomeError, err: fmt.Errorf("dependency %s: decoding its JSON body: %w", d.name, err),
			elapsed: res.elapsed, decodeTime: res.decodeTime}
	}
	summary := `{"dependency":` + strconv.Quote(d.name) + `,"items":` + strconv.Itoa(n) + `,"bytes":` + strconv.Itoa(len(res.body)) + "}\n"
	res.body, res.contentType = []byte(summary), "application/json"
	return res
}
