package wasm

// Compilations returns how many modules e compiled that it had not
// compiled before.
func (e *Engine) Compilations() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.compilations
}
