package zookeeper

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
)

// FuzzFrameParser: however a byte stream is cut into reads, frameParser
// reports the same frames as a reference reading of the whole stream: for
// each frame whose head is complete, its index and its first min(length,
// headMax) body bytes.
func FuzzFrameParser(f *testing.F) {
	frame := func(body ...byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	long := bytes.Repeat([]byte{7}, headMax+24)
	f.Add(frame(1, 2, 3), []byte{1})
	f.Add(append(frame(), frame(long...)...), []byte{2, 3, 5})
	f.Add(append(frame(long[:headMax]...), frame(long[:headMax+1]...)...), []byte{0, 4, 19, 20})
	f.Add([]byte{0, 0, 0}, []byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 2}, []byte{1, 1, 1})
	f.Fuzz(func(t *testing.T, stream, cuts []byte) {
		want := referenceFrames(stream)
		var got []string
		var p frameParser
		rest := stream
		for _, c := range cuts {
			n := min(int(c), len(rest))
			p.feed(rest[:n], func(i int, head []byte) { got = append(got, fmt.Sprintf("%d:%x", i, head)) })
			rest = rest[n:]
		}
		p.feed(rest, func(i int, head []byte) { got = append(got, fmt.Sprintf("%d:%x", i, head)) })
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("frameParser over %x cut at %v: got %v, want %v", stream, cuts, got, want)
		}
	})
}

// referenceFrames reads a whole stream the simple way.
func referenceFrames(s []byte) []string {
	var out []string
	for i := 0; len(s) >= 4; i++ {
		n := int(binary.BigEndian.Uint32(s))
		s = s[4:]
		h := min(n, headMax)
		if len(s) < h {
			break
		}
		if h == 0 {
			out = append(out, fmt.Sprintf("%d:", i))
		} else {
			out = append(out, fmt.Sprintf("%d:%x", i, s[:h]))
		}
		if len(s) < n {
			break
		}
		s = s[n:]
	}
	return out
}
