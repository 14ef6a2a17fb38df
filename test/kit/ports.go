package kit

import (
	"fmt"
	"net"
)

// FreePort returns a TCP port free on 127.0.0.1 now. Another process may
// take it before the caller binds it: callers that can, retry on
// "address already in use".
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free loopback port: %w", err)
	}
	addr, ok := l.Addr().(*net.TCPAddr)
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("finding a free loopback port: closing the probe listener: %w", err)
	}
	if !ok {
		return 0, fmt.Errorf("finding a free loopback port: listener address %v is not TCP", l.Addr())
	}
	return addr.Port, nil
}
