package harness

// ControllerPIDs returns the process IDs of the server's running controller
// processes, by name (kwok, kube-scheduler, kube-controller-manager).
func ControllerPIDs(s *Server) map[string]int {
	pids := make(map[string]int, len(s.controllers))
	for _, p := range s.controllers {
		pids[p.Name()] = p.Pid()
	}
	return pids
}
