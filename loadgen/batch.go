package loadgen

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// A batch is how a shard's results travel to the process that merges the
// load (RunShard writes them, Run with a Remote reads them): a header of
// uvarint count and zigzag watermark (every result of the shard that
// completed before this offset from t0 is in this batch or an earlier
// one), then count samples, each
//
//	uvarint target | byte flags | zigzag intended | zigzag actual |
//	zigzag latency | uvarint code | byte class | uvarint seq |
//	uvarint bytes in | uvarint bytes out |
//	[4 uvarint retry counts, flag attempt] | [uvarint len, error text, flag error] |
//	[uvarint bad | uvarint dropped | uvarint n | n × (uvarint len, name |
//	 uvarint len, desc | uvarint dur), flag timing: the response carried
//	 Server-Timing]
//
// Offsets are nanoseconds from the shard's t0. A batch holds at most
// MaxBatchSamples samples and an error text at most maxBatchError bytes.
const (
	MaxBatchSamples = 1 << 16
	maxBatchError   = 4 << 10
)

const (
	flagHarness = 1 << iota
	flagCancelled
	flagAttempt
	flagError
	flagTiming
	flagAll = flagHarness | flagCancelled | flagAttempt | flagError | flagTiming
)

// ErrBadBatch is wrapped by every error of DecodeBatch.
var ErrBadBatch = errors.New("loadgen: malformed shard batch")

// appendBatch appends the batch of ss with watermark to b.
func appendBatch(b []byte, watermark int64, ss []sample) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	b = binary.AppendVarint(b, watermark)
	for i := range ss {
		b = appendSample(b, &ss[i])
	}
	return b
}

func appendSample(b []byte, s *sample) []byte {
	var flags byte
	if s.harness {
		flags |= flagHarness
	}
	if s.cancelled {
		flags |= flagCancelled
	}
	if s.isAttempt() {
		flags |= flagAttempt
	}
	if s.errText != "" {
		flags |= flagError
	}
	if s.stSeen {
		flags |= flagTiming
	}
	b = binary.AppendUvarint(b, uint64(s.ep))
	b = append(b, flags)
	b = binary.AppendVarint(b, s.intended)
	b = binary.AppendVarint(b, s.actual)
	b = binary.AppendVarint(b, s.latency)
	b = binary.AppendUvarint(b, uint64(s.code))
	b = append(b, byte(s.class))
	b = binary.AppendUvarint(b, s.seq)
	b = binary.AppendUvarint(b, s.bytesIn)
	b = binary.AppendUvarint(b, s.bytesOut)
	if flags&flagAttempt != 0 {
		for _, v := range []int64{s.retry.Attempts, s.retry.Retries, s.retry.Retryable, s.retry.Refused} {
			b = binary.AppendUvarint(b, uint64(v))
		}
	}
	if flags&flagError != 0 {
		e := s.errText[:min(len(s.errText), maxBatchError)]
		b = binary.AppendUvarint(b, uint64(len(e)))
		b = append(b, e...)
	}
	if flags&flagTiming != 0 {
		b = appendTiming(b, s)
	}
	return b
}

// appendTiming appends s's Server-Timing fields (at most
// rundata.MaxTimingEntries entries, as ParseServerTiming returns).
func appendTiming(b []byte, s *sample) []byte {
	es := s.timing[:min(len(s.timing), rundata.MaxTimingEntries)]
	b = binary.AppendUvarint(b, uint64(s.stBad))
	b = binary.AppendUvarint(b, min(uint64(s.stDropped)+uint64(len(s.timing)-len(es)), math.MaxUint32))
	b = binary.AppendUvarint(b, uint64(len(es)))
	for _, e := range es {
		b = appendText(b, e.Name)
		b = appendText(b, e.Desc)
		b = binary.AppendUvarint(b, uint64(min(max(e.Dur, 0), MaxTimingDur)))
	}
	return b
}

// appendText appends s, cut to rundata.MaxTimingText bytes, with its
// length.
func appendText(b []byte, s string) []byte {
	s = s[:min(len(s), rundata.MaxTimingText)]
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// batchReader reads a batch's fields, remembering the first error.
type batchReader struct {
	b   []byte
	err error
}

func (r *batchReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrBadBatch, what)
	}
}

func (r *batchReader) uvarint(what string, limit uint64) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > limit {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *batchReader) varint(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *batchReader) byte1(what string) byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.fail(what)
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

// decodeBatch decodes a batch of a Config with targets targets, appending
// its samples to ss.
func decodeBatch(b []byte, targets int, ss []sample) (watermark int64, _ []sample, err error) {
	r := &batchReader{b: b}
	n := r.uvarint("count", MaxBatchSamples)
	watermark = r.varint("watermark")
	for i := uint64(0); i < n && r.err == nil; i++ {
		var s sample
		s.ep = int32(r.uvarint("target", uint64(max(targets-1, 0))))
		flags := r.byte1("flags")
		if flags&^flagAll != 0 {
			r.fail("unknown flags")
		}
		s.harness, s.cancelled = flags&flagHarness != 0, flags&flagCancelled != 0
		s.intended = r.varint("intended")
		s.actual = r.varint("actual")
		s.latency = r.varint("latency")
		s.code = uint16(r.uvarint("code", math.MaxUint16))
		s.class = Class(r.byte1("class"))
		if s.class >= rundata.NumClasses {
			r.fail("class")
		}
		s.seq = r.uvarint("seq", math.MaxInt64)
		s.bytesIn = r.uvarint("bytes in", math.MaxInt64)
		s.bytesOut = r.uvarint("bytes out", math.MaxInt64)
		if flags&flagAttempt != 0 {
			s.retry = rundata.RetryCounts{Attempts: int64(r.uvarint("attempts", math.MaxInt32)),
				Retries: int64(r.uvarint("retries", math.MaxInt32)), Retryable: int64(r.uvarint("retryable", math.MaxInt32)),
				Refused: int64(r.uvarint("refused", math.MaxInt32))}
			if !s.isAttempt() {
				r.fail("attempt without counts")
			}
		}
		if flags&flagError != 0 {
			l := r.uvarint("error length", maxBatchError)
			if r.err == nil && uint64(len(r.b)) < l {
				r.fail("error text")
			}
			if r.err == nil {
				s.errText = string(r.b[:l])
				r.b = r.b[l:]
			}
		}
		if flags&flagTiming != 0 {
			r.timing(&s)
		}
		if r.err == nil {
			ss = append(ss, s)
		}
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("trailing bytes")
	}
	return watermark, ss, r.err
}

// timing reads a sample's Server-Timing fields into s.
func (r *batchReader) timing(s *sample) {
	s.stSeen = true
	s.stBad = uint32(r.uvarint("timing bad", math.MaxUint32))
	s.stDropped = uint32(r.uvarint("timing dropped", math.MaxUint32))
	n := r.uvarint("timing entries", rundata.MaxTimingEntries)
	for i := uint64(0); i < n && r.err == nil; i++ {
		e := TimingEntry{Name: r.text("timing name"), Desc: r.text("timing desc")}
		e.Dur = time.Duration(r.uvarint("timing dur", uint64(MaxTimingDur)))
		if r.err == nil && e.Name == "" {
			r.fail("timing name")
		}
		s.timing = append(s.timing, e)
	}
}

// text reads a string of at most rundata.MaxTimingText bytes.
func (r *batchReader) text(what string) string {
	l := r.uvarint(what, rundata.MaxTimingText)
	if r.err == nil && uint64(len(r.b)) < l {
		r.fail(what)
	}
	if r.err != nil {
		return ""
	}
	v := string(r.b[:l])
	r.b = r.b[l:]
	return v
}
