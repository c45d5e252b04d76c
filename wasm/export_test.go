package wasm

// Compilations returns how many modules e compiled (a module compiled
// again from the cache counts once).
func (e *Engine) Compilations() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, t := range e.turns {
		if t.compiled.Load() {
			n++
		}
	}
	return n
}
