package partition

import (
	"reflect"
	"slices"
)

// lostWatcher waits on the Lost channels of every lease the loop holds with
// one goroutine (a reflect.Select over all of them), so that a lease the
// driver knows is gone ends its ownership at once without a goroutine per
// partition.
type lostWatcher struct {
	upd  chan []*part // capacity 1: the latest set to watch
	ch   chan *part   // a part whose lease is lost
	quit chan struct{}
	done chan struct{}
}

func newLostWatcher() *lostWatcher {
	return &lostWatcher{
		upd:  make(chan []*part, 1),
		ch:   make(chan *part),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
}

// update replaces the set watched with the parts of m still owned. Only the
// loop calls it, so the send never blocks.
func (w *lostWatcher) update(m map[int]*part) {
	var ps []*part
	for _, pt := range m {
		if pt.reason == nil {
			ps = append(ps, pt)
		}
	}
	select {
	case <-w.upd:
	default:
	}
	w.upd <- ps
}

func (w *lostWatcher) run() {
	defer close(w.done)
	var ps []*part
	for {
		cases := make([]reflect.SelectCase, 0, len(ps)+2)
		cases = append(cases,
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w.upd)},
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w.quit)})
		for _, pt := range ps {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(pt.lease.Lost())})
		}
		i, v, _ := reflect.Select(cases)
		switch i {
		case 0:
			ps = v.Interface().([]*part)
		case 1:
			return
		default:
			pt := ps[i-2]
			ps = slices.Delete(ps, i-2, i-1) // a closed channel would fire again
			select {
			case w.ch <- pt:
			case <-w.quit:
				return
			}
		}
	}
}

// stop ends run and waits for it.
func (w *lostWatcher) stop() {
	close(w.quit)
	<-w.done
}
