package migrate

import "github.com/leaderkit/elector/backend"

var _ backend.Warner = (*Backend)(nil)

// Warnings implements [backend.Warner]: the warnings of the old backend,
// then of the new one, each when it has any.
func (b *Backend) Warnings() []string {
	var out []string
	for _, s := range []backend.Backend{b.old, b.new} {
		if w, ok := s.(backend.Warner); ok {
			out = append(out, w.Warnings()...)
		}
	}
	return out
}
