# Sorts the objects of a kmemleak report (/sys/kernel/debug/kmemleak, Linux 6.12
# format; Documentation/dev-tools/kmemleak.rst) into the module's and the others, and
# prints "module=N other=M".
#
# An object is the module's when its allocation backtrace passes through module loading
# or unloading (load_module, do_init_module, do_one_initcall, *init_module,
# delete_module, free_module), through CPU-hotplug callbacks (cpuhp_*, where the
# per-CPU setup and teardown run), or through code with no symbol: kmemleak prints the
# backtrace when the report is read, after rmmod, so frames in the unloaded module
# print as bare addresses.
#
# Any other object is somebody else's: a leak of this kernel or a false positive of
# kmemleak (seen in the guests: the `struct cred` of a fork or an execve under way,
# prepare_creds <- copy_creds / prepare_exec_creds, unreferenced for one scan).
#
# Runs under busybox awk in the guests (and is tested with it on the host).

function close_object() {
	if (in_object) {
		if (ours)
			module++
		else
			other++
	}
	in_object = 0
	ours = 0
	in_backtrace = 0
}

/^unreferenced object / {
	close_object()
	in_object = 1
	next
}

/^  backtrace/ {
	in_backtrace = 1
	next
}

in_backtrace && /^    / {
	frame = $1
	if (frame ~ /^0x[0-9a-f]+$/ ||
	    frame ~ /(load_module|init_module|do_one_initcall|delete_module|free_module|cpuhp_)/)
		ours = 1
}

END {
	close_object()
	printf "module=%d other=%d\n", module + 0, other + 0
}
