package check

// NamespacedSysctl reports whether the kernel namespaces the sysctl key (an
// unmarked key, without the "-" of a removal), so that setting it in a
// container's own namespaces changes nothing outside the container. The
// set is the one runc's validator accepts for a container with its own
// namespaces (libcontainer/configs/validate/validator.go, sysctl): every
// net.* key (network namespace); kernel.msgmax, kernel.msgmnb,
// kernel.msgmni, kernel.sem, kernel.shmall, kernel.shmmax, kernel.shmmni,
// kernel.shm_rmid_forced and every fs.mqueue.* key (IPC namespace);
// kernel.hostname and kernel.domainname (UTS namespace).
//
// Like runc and sysctl(8), a key may use "/" instead of "." as separator:
// when its first separator is "/", "." and "/" swap roles
// ("net/ipv4/conf/eth0.100/rp_filter" is net.ipv4.conf.eth0/100.rp_filter).
// A key that is not a valid sysctl key (an empty element, a "..", a NUL)
// is never namespaced.
//
// runc 1.3 and later also accept user.* keys in a container with its own
// user namespace; NamespacedSysctl does not, since pods rarely have one
// and the answer must not depend on the container's namespaces.
func NamespacedSysctl(key string) bool {
	if sysctlKeyProblem(key) != "" {
		return false
	}
	slash := slashForm(key)
	if hasPrefixNorm(key, "net.", slash) || hasPrefixNorm(key, "fs.mqueue.", slash) {
		return true
	}
	for _, k := range [...]string{
		"kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.sem", "kernel.shmall",
		"kernel.shmmax", "kernel.shmmni", "kernel.shm_rmid_forced", // IPC
		"kernel.hostname", "kernel.domainname", // UTS
	} {
		if len(k) == len(key) && hasPrefixNorm(key, k, slash) {
			return true
		}
	}
	return false
}

// slashForm reports whether key uses "/" as separator: its first
// separator is "/" (runc validate.convertSysctlVariableToDotsSeparator).
func slashForm(key string) bool {
	for i := 0; i < len(key); i++ {
		switch key[i] {
		case '.':
			return false
		case '/':
			return true
		}
	}
	return false
}

// hasPrefixNorm reports whether key, read in dot form, starts with prefix
// (itself in dot form). In slash form, "/" reads as "." and "." as "/".
func hasPrefixNorm(key, prefix string, slash bool) bool {
	if len(key) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := key[i]
		if slash {
			switch c {
			case '.':
				c = '/'
			case '/':
				c = '.'
			}
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}
