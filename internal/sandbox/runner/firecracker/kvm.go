package firecracker

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// KVM ioctls (linux/kvm.h).
const (
	kvmGetAPIVersion = 0xAE00
	kvmCreateVM      = 0xAE01
	kvmAPIVersion    = 12
)

// ErrNoKVM wraps every reason ProbeKVM refuses.
var ErrNoKVM = errors.New("no usable KVM device")

// ProbeKVM checks that path is a KVM device the runner can use: a
// character device that opens read-write, answers KVM's stable API version
// and creates a VM (which fails when the CPU's virtualisation is missing
// or disabled).
func ProbeKVM(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: %s does not exist (no KVM on this host: bare metal or nested virtualisation needed)", ErrNoKVM, path)
	case err != nil:
		return fmt.Errorf("%w: %v", ErrNoKVM, err)
	case fi.Mode()&os.ModeCharDevice == 0:
		return fmt.Errorf("%w: %s is not a character device", ErrNoKVM, path)
	}
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_CLOEXEC, 0)
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("%w: %s: permission denied (the runner needs read-write access)", ErrNoKVM, path)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoKVM, err)
	}
	defer f.Close()
	v, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), kvmGetAPIVersion, 0)
	if errno != 0 || v != kvmAPIVersion {
		return fmt.Errorf("%w: %s does not answer KVM_GET_API_VERSION with %d (%v)", ErrNoKVM, path, kvmAPIVersion, errno)
	}
	vm, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), kvmCreateVM, 0)
	if errno != 0 {
		return fmt.Errorf("%w: %s cannot create a VM (virtualisation disabled or unavailable: %v)", ErrNoKVM, path, errno)
	}
	syscall.Close(int(vm))
	return nil
}
