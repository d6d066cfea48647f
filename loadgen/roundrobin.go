package loadgen

import (
	"net/http"
	"sync/atomic"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// targeter returns t's vegeta targeter: every request to t.URL, or, when
// t.URLs is set, each request to the next of t.URLs in turn (a fleet of
// instances behind no load balancer). It only chooses where a request
// goes, never when: the schedule stays the pacer's, so the model stays
// open. It is safe for concurrent use (vegeta's workers call it at once).
func (t Target) targeter() vegeta.Targeter {
	method := t.Method
	if method == "" {
		method = http.MethodGet
	}
	base := vegeta.Target{Method: method, URL: t.URL, Header: t.Header, Body: t.Body}
	if len(t.URLs) == 0 {
		return vegeta.NewStaticTargeter(base)
	}
	return roundRobin(base, t.URLs)
}

// roundRobin returns a targeter that gives the n-th call (from 0) base with
// URL urls[n mod len(urls)]. urls must not be empty.
func roundRobin(base vegeta.Target, urls []string) vegeta.Targeter {
	urls = append([]string(nil), urls...)
	var n atomic.Uint64
	return func(tgt *vegeta.Target) error {
		if tgt == nil {
			return vegeta.ErrNilTarget
		}
		*tgt = base
		tgt.URL = urls[(n.Add(1)-1)%uint64(len(urls))]
		return nil
	}
}
