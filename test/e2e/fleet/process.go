package fleet

// Process is a program the fleet runs beside its clusters that is not the
// operator (a peer controller a benchmark compares with). Down stops it
// with the fleet.
type Process struct{ d daemon }

// StartProcess starts argv as the fleet's process name, detached, logging
// to <Dir>/logs/<name>.log.
func (f *Fleet) StartProcess(name string, argv ...string) (*Process, error) {
	p := &Process{d: daemon{f.Dir, name}}
	if err := p.d.stop(); err != nil {
		return nil, err
	}
	f.logf("starting %s (log %s)", name, p.d.LogFile())
	if err := p.d.start(argv); err != nil {
		return nil, err
	}
	return p, nil
}

// PID is the process's pid while it runs.
func (p *Process) PID() (int, bool) { return p.d.running() }

// Log is the process's log file.
func (p *Process) Log() string { return p.d.LogFile() }

// Stop stops the process (SIGTERM, then SIGKILL) and returns once it is gone.
func (p *Process) Stop() error { return p.d.stop() }
