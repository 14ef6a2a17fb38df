package harness

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
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
}

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
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// Closing both ends unblocks the other direction.
		_ = dst.Close()
		_ = src.Close()
		done <- struct{}{}
	}
	go pipe(up, down)
	go pipe(down, up)
	<-done
	<-done
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
