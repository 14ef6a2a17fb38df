package harness

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards TCP connections to an API server. Stopping it closes the
// listener and every open connection, so the server is unreachable through
// it exactly as if it had stopped; starting it again listens on the same
// address. Targets are registered with their proxy's address, so a test
// can take a target away from the operator and bring it back.
type Proxy struct {
	// Addr is the host:port the proxy listens on.
	Addr     string
	upstream string

	mu       sync.Mutex
	listener net.Listener
	conns    map[net.Conn]struct{}
	wg       sync.WaitGroup
	// lag is how long what the operator sends is held before it reaches the
	// API server (SetLag), in nanoseconds.
	lag atomic.Int64
}

// SetLag holds every byte sent to the API server through the proxy for d
// before it passes on, from now until it is set again (0: none), on the
// connections open and those to come: a slow network, or an API server
// slow to answer. What the API server sends back is not held, so watches
// are as prompt as ever. Bytes held when the lag ends pass on at once, in
// order.
func (p *Proxy) SetLag(d time.Duration) { p.lag.Store(int64(d)) }

// newProxy starts a proxy to upstream on a free loopback port.
func newProxy(upstream string) (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy to %s: listening: %w", upstream, err)
	}
	p := &Proxy{Addr: l.Addr().String(), upstream: upstream, conns: map[net.Conn]struct{}{}}
	p.serve(l)
	return p, nil
}

// Start listens again after Stop. It does nothing if the proxy runs.
func (p *Proxy) Start() error {
	p.mu.Lock()
	running := p.listener != nil
	p.mu.Unlock()
	if running {
		return nil
	}
	l, err := net.Listen("tcp", p.Addr)
	if err != nil {
		return fmt.Errorf("proxy to %s: listening on %s again: %w", p.upstream, p.Addr, err)
	}
	p.serve(l)
	return nil
}

// Stop closes the listener and every open connection, and waits for the
// proxy's goroutines to end.
func (p *Proxy) Stop() error {
	p.mu.Lock()
	l := p.listener
	p.listener = nil
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	var err error
	if l != nil {
		err = l.Close()
	}
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (p *Proxy) serve(l net.Listener) {
	p.mu.Lock()
	p.listener = l
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			down, err := l.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.forward(down)
			}()
		}
	}()
}

func (p *Proxy) forward(down net.Conn) {
	up, err := net.Dial("tcp", p.upstream)
	if err != nil {
		_ = down.Close()
		return
	}
	if !p.track(down, up) {
		_ = down.Close()
		_ = up.Close()
		return
	}
	defer p.untrack(down, up)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn, copyTo func(dst, src net.Conn)) {
		copyTo(dst, src)
		// Closing both ends unblocks the other direction.
		_ = dst.Close()
		_ = src.Close()
		done <- struct{}{}
	}
	go pipe(up, down, p.delayLine)
	go pipe(down, up, func(dst, src net.Conn) { _, _ = io.Copy(dst, src) })
	<-done
	<-done
}

// delayLine copies src to dst, each chunk held until the lag set when it
// passes on has gone by since it was read.
func (p *Proxy) delayLine(dst, src net.Conn) {
	type chunk struct {
		read time.Time
		data []byte
	}
	chunks := make(chan chunk, 256)
	go func() {
		defer close(chunks)
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				chunks <- chunk{read: time.Now(), data: append([]byte(nil), buf[:n]...)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range chunks {
		if wait := time.Until(c.read.Add(time.Duration(p.lag.Load()))); wait > 0 {
			time.Sleep(wait)
		}
		if _, err := dst.Write(c.data); err != nil {
			// Closing src ends the reader, which closes chunks.
			_ = src.Close()
			for range chunks {
			}
			return
		}
	}
}

// track registers a connection pair unless the proxy stopped meanwhile.
func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.listener == nil {
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		delete(p.conns, c)
	}
}
