# shellcheck shell=bash
# The x86 machine of scripts/hil (sourced): q35 under TCG, Debian's amd64
# kernel booted from its uncompressed vmlinux.

# x86_kernel: fetch and unpack the kernel, headers and source of the current
# ABI; sets kroot, kver, vmlinux, srcdir.
x86_kernel() {
  local abi kbuild
  if [ -n "${PROMCP_HIL_ABI:-}" ]; then abi=$PROMCP_HIL_ABI; else
    abi=$(abi linux-image-amd64)
    # Not cached yet: the lists may be older than the archive (the security
    # archive keeps only the current ABI), so refresh them first.
    if [ -z "$abi" ] || [ -z "$(compgen -G "$cache/debs/linux-image-$abi-amd64_*.deb")" ]; then
      $SUDO apt-get update -qq || true; abi=$(abi linux-image-amd64)
    fi
  fi
  [ -n "$abi" ] || unavailable "no linux-image-amd64 candidate in apt"
  kver=$abi-amd64
  kbuild=$(apt-cache depends "linux-headers-$kver" | sed -n 's/.*Depends: \(linux-kbuild-[0-9.]*\)$/\1/p' | head -1)
  fetch "linux-image-$kver" "linux-headers-$kver" "linux-headers-$abi-common" "$kbuild" "linux-source-${kbuild#linux-kbuild-}"
  kroot=$cache/x86-$kver
  if [ ! -f "$kroot/.unpacked" ]; then
    say "unpack $kver"
    rm -rf "$kroot"; mkdir -p "$kroot"
    for p in "linux-image-$kver" "linux-headers-$kver" "linux-headers-$abi-common" "$kbuild"; do
      dpkg-deb -x "$(compgen -G "$cache/debs/${p}_*.deb" | head -1)" "$kroot"
    done
    # Debian's headers include the common tree by absolute path.
    sed -i "s|^include /usr/src/|include $kroot/usr/src/|" "$kroot/usr/src/linux-headers-$kver/Makefile"
    # A bzImage decompresses for ~28 s under TCG: boot the vmlinux inside it.
    local bz=$kroot/boot/vmlinuz-$kver off
    off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$bz" | head -1 | cut -d: -f1)
    [ -n "$off" ] || { say "no xz stream in $bz"; return 1; }
    xz -dc --single-stream <(tail -c +$((off + 1)) "$bz") >"$kroot/vmlinux" || { say "cannot decompress $bz"; return 1; }
    touch "$kroot/.unpacked"
  fi
  vmlinux=$kroot/vmlinux
  local src=linux-source-${kbuild#linux-kbuild-}
  srcdir=$cache/$src
  if [ ! -f "$srcdir/.unpacked" ]; then
    say "take gpio-sim and irq_sim from $src"
    rm -rf "$srcdir"; mkdir -p "$srcdir"
    dpkg-deb --fsys-tarfile "$(compgen -G "$cache/debs/${src}_*.deb" | head -1)" | tar -xO "./usr/src/$src.tar.xz" |
      xz -dc | tar -x -C "$srcdir" --strip-components=1 "$src/drivers/gpio/gpio-sim.c" "$src/drivers/gpio/gpiolib.h" "$src/kernel/irq/irq_sim.c"
    touch "$srcdir/.unpacked"
  fi
}

# x86_modules DIR: build gpio-sim, pwm-dummy and w1-fake against the headers.
x86_modules() {
  local b=$1
  rm -rf "$b"; mkdir -p "$b"
  cp scripts/hil.d/kmod/*.c scripts/hil.d/kmod/Kbuild "$b/"
  cp "$srcdir/drivers/gpio/gpio-sim.c" "$b/gpio-sim-core.c"
  cp "$srcdir/drivers/gpio/gpiolib.h" "$srcdir/kernel/irq/irq_sim.c" "$b/"
  # irq_to_desc is not exported to modules.
  sed -i 's/handle_simple_irq(irq_to_desc(irqnum))/generic_handle_irq_safe(irqnum)/' "$b/irq_sim.c"
  say "build gpio-sim, pwm-dummy and w1-fake for $kver"
  make -s -C "$kroot/usr/src/linux-headers-$kver" M="$b" modules 2>&1 | grep -v 'Skipping BTF' >&2 || true
  for m in gpio-sim pwm-dummy w1-fake; do [ -f "$b/$m.ko" ] || { say "module $m did not build"; return 1; }; done
}

hil_x86() {
  command -v qemu-system-x86_64 >/dev/null || unavailable "no qemu-system-x86_64"
  local t0=$SECONDS
  x86_kernel || return 1
  local work=$cache/run-x86
  rm -rf "$work"; mkdir -p "$work/root/hil"
  x86_modules "$work/kmod" || return 1
  build amd64
  local r=$work/root/hil mods="" m
  for m in fs/configfs/configfs drivers/w1/wire drivers/w1/slaves/w1_therm; do
    cp "$kroot/lib/modules/$kver/kernel/$m.ko" "$r/"; mods="$mods ${m##*/}.ko"
  done
  cp "$work/kmod/gpio-sim.ko" "$work/kmod/pwm-dummy.ko" "$work/kmod/w1-fake.ko" "$r/"
  echo "$mods gpio-sim.ko pwm-dummy.ko w1-fake.ko" >"$r/modules"
  cp "$cache/bin/amd64/promcp-device" "$cache/bin/amd64/hilrun" scripts/hil.d/x86.yml scripts/hil.d/hil.policy.yml "$r/"
  cp scripts/hil.d/init-x86 "$work/root/init"; chmod +x "$work/root/init"
  initramfs "$work/root" "$work/initrd.gz" /bin/busybox
  say "prepared in $((SECONDS - t0))s; boot $kver on q35 (TCG)"
  local sock=$work/ttyS1.sock
  "$cache/bin/hilrun-host" rtu-slave scripts/hil.d/x86.yml "$sock" 2>"$work/rtu-slave.log" &
  local slave=$!
  local rc=0
  run_vm "$work/console.log" 300 qemu-system-x86_64 -machine q35,accel=tcg -cpu max -m 512 -smp 1 \
    -nographic -no-reboot -kernel "$vmlinux" -initrd "$work/initrd.gz" \
    -append "console=ttyS0 quiet panic=-1 rdinit=/init" \
    -serial mon:stdio -serial "unix:$sock,server=on,wait=off" || rc=1
  kill "$slave" 2>/dev/null || true; wait "$slave" 2>/dev/null || true
  say "x86: $((SECONDS - t0))s in all"
  return $rc
}
