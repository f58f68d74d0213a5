#!/usr/bin/env bash
# A cloud image for the VM runtime's tests (docs/vm-runtime.md): a qcow2 disk that boots by
# itself (BIOS, syslinux), a Debian 12 system (its cloud kernel) with cloud-init (NoCloud), the
# QEMU guest agent and OpenSSH, as a tenant's cloud image would be. The VM runtime gives it a
# copy-on-write overlay per instance and a cloud-init seed (the user, their SSH keys, the command).
#
# Made without mounting anything or loop devices: mmdebstrap builds the root in a directory,
# mkfs.ext4 -d makes the root filesystem of it, syslinux installs itself into a FAT boot partition
# through mtools, sfdisk writes the partition table into a plain file, qemu-img converts the disk.
#
# Idempotent: the image is made once as DIR/cloud.qcow2 (default build/vm-cloud-image) and reused;
# prints the image's path. Needs root (mmdebstrap's root mode) and the packages install-deps.sh
# test installs (mmdebstrap, syslinux, mtools, dosfstools, fdisk, qemu-utils); packages come from
# apt's configured mirror.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-build/vm-cloud-image}"
dir="$(mkdir -p "$dir" && cd "$dir" && pwd)"
image="$dir/cloud.qcow2"
if [[ -s "$image" && "$image" -nt scripts/vm-cloud-image.sh ]]; then
  echo "$image"
  exit 0
fi
work="$(mktemp -d "$dir/work.XXXXXX")"
trap 'rm -rf "$work"' EXIT
root="$work/root"
# Debian's cloud kernel, as in Debian's own cloud images (genericcloud): built without virtio-9p,
# so the VM runtime shares /workspace and volumes in over virtio-fs (the agent's --vm-shares
# virtiofs). D-Bus, for systemd-logind: it is what shuts the guest down when the runtime presses
# the power button (a stop).
mmdebstrap --quiet --variant=minbase --mode=root \
  --include=linux-image-cloud-amd64,systemd-sysv,udev,dbus,cloud-init,cloud-guest-utils,qemu-guest-agent,openssh-server,sudo,ifupdown,isc-dhcp-client,kmod,iproute2,busybox \
  bookworm "$root" >&2
cat > "$root/etc/fstab" <<'EOF'
LABEL=gpurent-root / ext4 defaults,errors=remount-ro 0 1
EOF
# Only the NoCloud seed: probing the clouds' metadata services would wait on each.
cat > "$root/etc/cloud/cloud.cfg.d/90-gpurent.cfg" <<'EOF'
datasource_list: [ NoCloud, None ]
EOF
echo gpurent-vm > "$root/etc/hostname"
rm -rf "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* "$root"/usr/share/man/*
kernel="$(ls "$root"/boot/vmlinuz-* | head -n 1)"
initrd="$(ls "$root"/boot/initrd.img-* | head -n 1)"

# Root filesystem: the directory as ext4, with room to grow (the overlay is sparse).
root_mb=3072
mkfs.ext4 -q -L gpurent-root -d "$root" "$work/root.img" "${root_mb}M" >&2
# Boot partition: FAT with syslinux, the kernel and the initrd.
boot_mb=128
mkfs.fat -C -n GPURENTBOOT "$work/boot.img" $((boot_mb * 1024)) >/dev/null
syslinux --install "$work/boot.img"
cat > "$work/syslinux.cfg" <<'EOF'
DEFAULT linux
TIMEOUT 0
LABEL linux
  KERNEL vmlinuz
  APPEND initrd=initrd.img root=LABEL=gpurent-root ro console=ttyS0 net.ifnames=0
EOF
mcopy -i "$work/boot.img" "$kernel" ::vmlinuz
mcopy -i "$work/boot.img" "$initrd" ::initrd.img
mcopy -i "$work/boot.img" "$work/syslinux.cfg" ::syslinux.cfg
# The disk: an MBR with syslinux's boot code, the boot partition (active), the root partition.
truncate -s $((1 + boot_mb + root_mb))M "$work/disk.img"
sfdisk --quiet "$work/disk.img" <<EOF
label: dos
start=1MiB, size=${boot_mb}MiB, type=c, bootable
start=$((1 + boot_mb))MiB, size=${root_mb}MiB, type=83
EOF
dd if=/usr/lib/syslinux/mbr/mbr.bin of="$work/disk.img" bs=440 count=1 conv=notrunc status=none
dd if="$work/boot.img" of="$work/disk.img" bs=1M seek=1 conv=notrunc,sparse status=none
dd if="$work/root.img" of="$work/disk.img" bs=1M seek=$((1 + boot_mb)) conv=notrunc,sparse status=none
qemu-img convert -O qcow2 "$work/disk.img" "$work/cloud.qcow2"
# Readable by the node's users whatever the umask: a root agent's QEMU runs as the instance's user.
chmod 0644 "$work/cloud.qcow2"
mv "$work/cloud.qcow2" "$image"
echo "$image"
