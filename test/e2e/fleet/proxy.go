package fleet

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
)

// Proxy relays TCP connections to a cluster's API server until Hang; from
// then on it is an API server that hangs: it accepts connections and never
// answers, and the connections open before stop being relayed (what they
// send is dropped, nothing comes back).
type Proxy struct {
	ln     net.Listener
	target string
	hang   chan struct{}
	closed chan struct{}
	once   sync.Once
	hangs  sync.Once
	mu     sync.Mutex
	conns  []net.Conn
}

// StartProxy relays 127.0.0.1:<a free port> to the API server at server
// (https://host:port). TLS goes through untouched: the server's
// certificate, issued for 127.0.0.1, still verifies.
func StartProxy(server string) (*Proxy, error) {
	u, err := url.Parse(server)
	if err != nil {
		return nil, fmt.Errorf("proxy to %s: %w", server, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy to %s: %w", server, err)
	}
	p := &Proxy{ln: ln, target: u.Host, hang: make(chan struct{}), closed: make(chan struct{})}
	go p.serve()
	return p, nil
}

// URL is the proxy's address as an API server's: https://127.0.0.1:<port>.
func (p *Proxy) URL() string { return "https://" + p.ln.Addr().String() }

// Hang makes the proxy stop answering, for good.
func (p *Proxy) Hang() { p.hangs.Do(func() { close(p.hang) }) }

// Close stops the proxy and closes every connection it holds.
func (p *Proxy) Close() error {
	p.once.Do(func() { close(p.closed) })
	err := p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	return err
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.hold(c)
		go p.relay(c)
	}
}

// hold keeps c, to close it with the proxy.
func (p *Proxy) hold(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns = append(p.conns, c)
}

// relay relays c to the API server, unless the proxy hangs.
func (p *Proxy) relay(c net.Conn) {
	select {
	case <-p.hang:
		return // accepted, never answered
	default:
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.hold(up)
	go p.pump(up, c)
	go p.pump(c, up)
}

// pump copies src to dst until either ends, or drops what src sends once
// the proxy hangs.
func (p *Proxy) pump(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			select {
			case <-p.hang:
				continue // dropped
			default:
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				_ = dst.Close()
			}
			return
		}
	}
}
