package testenv

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that is safe for concurrent use, for capturing
// what a logger or a child process writes while a test reads it. A test
// that waits for some output gets a channel from [Buffer.Next] that the
// next write closes, instead of reading the buffer again and again.
type Buffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed by the next Write; nil until Next asks
}

// Write appends p to the buffer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.written != nil {
		close(b.written)
		b.written = nil
	}
	return b.b.Write(p)
}

// String returns what has been written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Next returns what has been written so far and a channel that the next
// Write closes: a test waiting for some output checks the text and, if
// what it waits for is not there yet, waits on the channel and looks
// again. No write can fall between the two.
func (b *Buffer) Next() (string, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.written == nil {
		b.written = make(chan struct{})
	}
	return b.b.String(), b.written
}
