package pgproxy

// TypeHang is the hang fault: the query is never answered (a cancel
// request for its connection ends it with 57014). The first error or hang
// that fired answers.
const TypeHang = "hang"

func init() {
	register(TypeHang, kind{
		act: func(_ *Fault, _ *qrand, d *decision) {
			if !d.synthetic() {
				d.hang = true
			}
		},
	})
}
