// Package payload builds the large JSON documents of payload-heavy
// responses: the dependency stub's payload option and the fault proxy's
// payload fault both answer with one, so that the service that calls them
// spends CPU and GC decoding it.
package payload

import (
	"math/rand/v2"
	"strconv"
)

// ContentType is the media type of a payload.
const ContentType = "application/json"

// Max is the largest payload this package builds, in bytes.
const Max = 64 << 20

// JSON returns a JSON array of small records (an order line each: id,
// sku, quantity, price, a flag and two tags), as many as fit in size bytes,
// so that the document is at most size bytes and less than one record
// (under 160 bytes) shorter. Records are drawn from a PCG seeded with
// seed: the same size and seed give the same bytes. A size below 2 gives
// "[]" all the same; sizes above Max are clamped to Max. Each record has
// nested values (an array), so that a generic decode allocates like a real
// one.
func JSON(size int, seed uint64) []byte {
	size = min(max(size, 2), Max)
	r := rand.New(rand.NewPCG(seed, 0x7061796c6f6164))
	out := make([]byte, 0, size)
	out = append(out, '[')
	rec := make([]byte, 0, 192)
	for i := 0; ; i++ {
		rec = record(rec[:0], i, r)
		sep := 0
		if i > 0 {
			sep = 1
		}
		if len(out)+sep+len(rec)+1 > size {
			break
		}
		if sep == 1 {
			out = append(out, ',')
		}
		out = append(out, rec...)
	}
	return append(out, ']')
}

var tags = []string{"retail", "wholesale", "priority", "gift", "backorder", "fragile", "bulk", "promo"}

// record appends record i to b.
func record(b []byte, i int, r *rand.Rand) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `,"sku":"SKU-`...)
	b = strconv.AppendUint(b, r.Uint64N(1e8), 36)
	b = append(b, `","qty":`...)
	b = strconv.AppendInt(b, 1+r.Int64N(99), 10)
	b = append(b, `,"price":`...)
	b = strconv.AppendFloat(b, float64(r.Int64N(1e6))/100, 'f', 2, 64)
	b = append(b, `,"in_stock":`...)
	b = strconv.AppendBool(b, r.IntN(4) != 0)
	b = append(b, `,"tags":["`...)
	b = append(b, tags[r.IntN(len(tags))]...)
	b = append(b, `","`...)
	b = append(b, tags[r.IntN(len(tags))]...)
	return append(b, `"]}`...)
}
