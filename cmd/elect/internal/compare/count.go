package compare

import (
	"encoding/binary"
	"strconv"
)

// A requestParser reads the bytes a client sends to a store on one
// connection, in order and in chunks of any size, and counts the requests
// they hold. It needs no credentials and changes nothing: it only reads the
// protocol's framing. One parser serves one connection.
type requestParser interface {
	// feed reads the next bytes of the stream and returns the number of
	// requests that began in them.
	feed(p []byte) int
}

// parserFor returns a function making a parser for the wire protocol of
// scheme's stores, or nil when the scheme's requests cannot be counted on
// the wire (TLS hides them; unknown schemes).
func parserFor(scheme string) func() requestParser {
	switch scheme {
	case "redis":
		return func() requestParser { return &respParser{} }
	case "etcd":
		return func() requestParser { return &grpcParser{streams: map[uint32]*grpcStream{}} }
	case "zk":
		return func() requestParser { return &zkParser{} }
	}
	return nil
}

// respParser counts Redis commands: a client sends each as a RESP array of
// bulk strings ("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"), or as an inline command
// (one line). https://redis.io/docs/latest/develop/reference/protocol-spec/
type respParser struct {
	line  []byte // the header line read so far
	skip  int    // bytes of a bulk string (and its CRLF) still to skip
	elems int    // bulk strings still to come in the current array
}

func (r *respParser) feed(p []byte) int {
	n := 0
	for len(p) > 0 {
		if r.skip > 0 {
			k := min(r.skip, len(p))
			r.skip -= k
			p = p[k:]
			continue
		}
		c := p[0]
		p = p[1:]
		if c != '\n' {
			if len(r.line) < 32 { // headers are short; the rest of a long inline command is not needed
				r.line = append(r.line, c)
			}
			continue
		}
		n += r.endLine()
		r.line = r.line[:0]
	}
	return n
}

// endLine handles a complete header line and returns 1 when a command
// began with it.
func (r *respParser) endLine() int {
	line := r.line
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	if len(line) == 0 {
		return 0
	}
	v, _ := strconv.Atoi(string(line[1:]))
	switch {
	case r.elems > 0 && line[0] == '$':
		r.elems--
		r.skip = max(v, 0) + 2
		return 0
	case line[0] == '*':
		r.elems = max(v, 0)
		return 1
	default: // an inline command
		return 1
	}
}

// zkParser counts ZooKeeper requests: every packet a client sends, the
// session's connect request and pings included, is a 4-byte big-endian
// length followed by that many bytes.
// https://zookeeper.apache.org/doc/current/zookeeperProgrammers.html
type zkParser struct {
	hdr  [4]byte
	hn   int
	skip int
}

func (z *zkParser) feed(p []byte) int {
	n := 0
	for len(p) > 0 {
		if z.skip > 0 {
			k := min(z.skip, len(p))
			z.skip -= k
			p = p[k:]
			continue
		}
		k := copy(z.hdr[z.hn:], p)
		z.hn += k
		p = p[k:]
		if z.hn == len(z.hdr) {
			z.skip = int(binary.BigEndian.Uint32(z.hdr[:]))
			z.hn = 0
			n++
		}
	}
	return n
}

// grpcParser counts the gRPC messages a client sends over cleartext HTTP/2
// (etcd's client): a unary call is one message, and each message on a
// stream (a lease keep-alive, a watch request) is one request. It reads the
// connection preface, then HTTP/2 frames (RFC 9113 §4.1), and in the DATA
// frames of each stream the gRPC length-prefixed messages (a flag byte and
// a 4-byte big-endian length).
// https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md
type grpcParser struct {
	preface int     // bytes of the 24-byte client preface skipped so far
	hdr     [9]byte // the frame header read so far
	hn      int
	// The payload of the current frame: padFlag is set while the padding
	// length byte of a PADDED DATA frame is still to read, data counts the
	// message bytes still to read, skip the bytes to ignore after them.
	padFlag    bool
	data, skip int
	stream     *grpcStream
	endStream  bool
	streamID   uint32
	streams    map[uint32]*grpcStream
}

// grpcStream is the message framing state of one HTTP/2 stream.
type grpcStream struct {
	hdr  [5]byte
	hn   int
	left int // bytes of the current message still to come
}

const (
	h2Preface      = len("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	h2Data         = 0x0
	h2RSTStream    = 0x3
	h2FlagEnd      = 0x1
	h2FlagPadded   = 0x8
	grpcMessageHdr = 5
)

func (g *grpcParser) feed(p []byte) int {
	if g.preface < h2Preface {
		k := min(h2Preface-g.preface, len(p))
		g.preface += k
		p = p[k:]
	}
	n := 0
	for len(p) > 0 {
		switch {
		case g.padFlag: // the DATA frame's pad length byte
			pad := int(p[0])
			p = p[1:]
			g.padFlag = false
			g.data -= 1 + pad
			g.skip = pad
			if g.data < 0 { // malformed: ignore the frame
				g.skip += g.data
				g.data = 0
			}
		case g.data > 0:
			k := min(g.data, len(p))
			n += g.stream.feed(p[:k])
			g.data -= k
			p = p[k:]
		case g.skip > 0:
			k := min(g.skip, len(p))
			g.skip -= k
			p = p[k:]
		default:
			k := copy(g.hdr[g.hn:], p)
			g.hn += k
			p = p[k:]
			if g.hn == len(g.hdr) {
				g.hn = 0
				g.frame()
			}
		}
		if g.data == 0 && g.skip == 0 && !g.padFlag && g.endStream {
			delete(g.streams, g.streamID)
			g.endStream = false
		}
	}
	return n
}

// frame starts reading the payload of the frame whose header was just read.
func (g *grpcParser) frame() {
	length := int(g.hdr[0])<<16 | int(g.hdr[1])<<8 | int(g.hdr[2])
	typ, flags := g.hdr[3], g.hdr[4]
	id := binary.BigEndian.Uint32(g.hdr[5:]) & 0x7fffffff
	g.streamID, g.endStream = id, false
	switch typ {
	case h2Data:
		s := g.streams[id]
		if s == nil {
			s = &grpcStream{}
			g.streams[id] = s
		}
		g.stream, g.data = s, length
		g.padFlag = flags&h2FlagPadded != 0 && length > 0
		g.endStream = flags&h2FlagEnd != 0
	case h2RSTStream:
		g.skip = length
		g.endStream = true
	default:
		g.skip = length
	}
}

// feed reads message bytes of the stream and returns the number of
// messages that began in them.
func (s *grpcStream) feed(p []byte) int {
	n := 0
	for len(p) > 0 {
		if s.left > 0 {
			k := min(s.left, len(p))
			s.left -= k
			p = p[k:]
			continue
		}
		k := copy(s.hdr[s.hn:], p)
		s.hn += k
		p = p[k:]
		if s.hn == grpcMessageHdr {
			s.hn = 0
			s.left = int(binary.BigEndian.Uint32(s.hdr[1:]))
			n++
		}
	}
	return n
}
