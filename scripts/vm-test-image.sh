#!/usr/bin/env bash
# The VM runtime's test image (docs/vm-runtime.md): Debian's kernel and a busybox initramfs whose
# /init is the guest side of a kernel+initrd VM: it loads the virtio modules, brings up the user-mode
# network (10.0.2.15, the address QEMU forwards services' ports to), starts the QEMU guest agent
# (exec), mounts the shares
# named on the kernel's command line, runs the command given there (base64) or the VM runtime's
# /run/gpurent/command.sh with its output on the serial console, prints "GPURENT_EXIT <code>" and
# powers off.
#
# Idempotent: the image is made once under DIR (default build/vm-test-image) and reused; prints
# DIR. Needs busybox-static and apt's package lists (scripts/install-deps.sh test); the kernel's
# package is downloaded with apt-get download and unpacked here, never installed.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-build/vm-test-image}"
dir="$(mkdir -p "$dir" && cd "$dir" && pwd)"
if [[ -s "$dir/vmlinuz" && -s "$dir/initrd.gz" && "$dir/initrd.gz" -nt scripts/vm-test-image.sh ]]; then
  echo "$dir"
  exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
kernel_package() {
  apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}'
}
package="$(kernel_package)"
if [[ -z "$package" ]]; then  # a fresh machine's apt has no package lists yet
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  package="$(kernel_package)"
fi
[[ -n "$package" ]] || { echo "vm-test-image: no linux-image package (apt-get update?)" >&2; exit 1; }
(cd "$work" && apt-get download "$package" >/dev/null 2>&1 || apt-get download "$package" >&2)
dpkg-deb -x "$work"/linux-image-*.deb "$work/kernel"
version="${package#linux-image-}"
modules="$work/kernel/lib/modules/$version/kernel"
root="$work/root"
mkdir -p "$root"/{bin,proc,sys,dev,tmp,mnt,lib/modules}
cp /bin/busybox "$root/bin/busybox"
# In the order they load (each after what it depends on).
for m in drivers/virtio/virtio_ring drivers/virtio/virtio drivers/virtio/virtio_pci_modern_dev \
         drivers/virtio/virtio_pci_legacy_dev drivers/virtio/virtio_pci drivers/block/virtio_blk \
         drivers/char/virtio_console fs/netfs/netfs fs/fscache/fscache net/9p/9pnet \
         net/9p/9pnet_virtio fs/9p/9p fs/fuse/fuse fs/fuse/virtiofs net/core/failover drivers/net/net_failover \
         drivers/net/virtio_net; do
  if [[ -f "$modules/$m.ko" ]]; then
    cp "$modules/$m.ko" "$root/lib/modules/"
    basename "$m" >> "$root/lib/modules/order"
  fi
done
# The QEMU guest agent, for exec (src/agent/vm/guest_agent.h): Debian's qemu-ga, unpacked like the
# kernel, with the host's copies of the libraries it links (installed with QEMU itself).
(cd "$work" && apt-get download qemu-guest-agent >/dev/null 2>&1 || apt-get download qemu-guest-agent >&2)
dpkg-deb -x "$work"/qemu-guest-agent_*.deb "$work/qga"
cp "$work/qga/usr/sbin/qemu-ga" "$root/bin/qemu-ga"
if ldd "$work/qga/usr/sbin/qemu-ga" | grep -q "not found"; then
  echo "vm-test-image: qemu-ga needs libraries this host lacks:" >&2
  ldd "$work/qga/usr/sbin/qemu-ga" | grep "not found" >&2
  exit 1
fi
for lib in $(ldd "$work/qga/usr/sbin/qemu-ga" | awk '$2 == "=>" {print $3} $1 ~ /^\// {print $1}'); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
cat > "$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /lib/modules/order); do insmod "/lib/modules/$m.ko" 2>/dev/null; done
# QEMU's user-mode network: the guest is 10.0.2.15, the host's forwarded ports reach it there.
ip link set lo up
if ip link set eth0 up 2>/dev/null; then
  ip addr add 10.0.2.15/24 dev eth0
  ip route add default via 10.0.2.2
fi
arg() { tr ' ' '\n' < /proc/cmdline | sed -n "s/^gpurent\.$1=//p"; }
# gpurent.shares=tag:/path,tag:/path (read-write), over gpurent.sharefs=9p (the default) or virtiofs
sharefs="$(arg sharefs)"
for share in $(arg shares | tr ',' ' '); do
  mkdir -p "${share#*:}"
  if [ "$sharefs" = virtiofs ]; then
    mount -t virtiofs "${share%%:*}" "${share#*:}"
  else
    mount -t 9p -o trans=virtio,version=9p2000.L "${share%%:*}" "${share#*:}"
  fi
done
# qemu-ga on its virtio-serial port, when the VM has one (exec).
for port in /sys/class/virtio-ports/*; do
  if [ "$(cat "$port/name" 2>/dev/null)" = org.qemu.guest_agent.0 ]; then
    qemu-ga -m virtio-serial -p "/dev/${port##*/}" -t /tmp -f /tmp/qemu-ga.pid &
  fi
done
echo "GPURENT_BOOTED"
# The command: gpurent.cmd= (base64), else the VM runtime's /run/gpurent/command.sh.
cmd="$(arg cmd | base64 -d)"
if [ -z "$cmd" ] && [ -f /run/gpurent/command.sh ]; then cmd="sh /run/gpurent/command.sh"; fi
sh -c "$cmd"
echo "GPURENT_EXIT $?"
sync
poweroff -f
INIT
chmod +x "$root/init"
(cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1 > "$work/initrd.gz")
cp "$work/kernel/boot/vmlinuz-$version" "$dir/vmlinuz"
# Readable by the node's users whatever the umask: a root agent's QEMU runs as the instance's user.
chmod 0644 "$dir/vmlinuz" "$work/initrd.gz"
mv "$work/initrd.gz" "$dir/initrd.gz"
echo "$dir"
