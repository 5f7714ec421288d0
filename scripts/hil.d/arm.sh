# shellcheck shell=bash
# The ARM machine of scripts/hil (sourced): vexpress-a9 under TCG, Debian's
# armhf armmp kernel, the real i2c-versatile driver and QEMU's I2C devices.

# apt options for armhf packages, with lists kept in the cache (the host's
# apt configuration is not changed).
arm_apt() {
  local c=$cache/apt-armhf
  mkdir -p "$c/lists/partial" "$c/archives/partial"
  echo -o APT::Architecture=armhf -o APT::Architectures::=armhf -o "Dir::State::Lists=$c/lists" \
    -o "Dir::Cache::Archives=$c/archives" -o "Dir::Cache::pkgcache=$c/pkgcache.bin" -o "Dir::Cache::srcpkgcache=$c/srcpkgcache.bin"
}

# arm_kernel: fetch and unpack the armmp kernel; sets akroot, akver.
arm_kernel() {
  local o abi
  read -ra o <<<"$(arm_apt)"
  if [ -n "${PROMCP_HIL_ABI:-}" ]; then abi=$PROMCP_HIL_ABI; else
    abi=$(abi linux-image-armmp "${o[@]}")
    # Not cached yet: fetch or refresh the armhf lists first.
    if [ -z "$abi" ] || [ -z "$(compgen -G "$cache/debs/linux-image-$abi-armmp_*.deb")" ]; then
      apt-get "${o[@]}" update -qq || unavailable "apt-get update for armhf failed"
      abi=$(abi linux-image-armmp "${o[@]}")
    fi
  fi
  [ -n "$abi" ] || unavailable "no linux-image-armmp candidate in apt"
  akver=$abi-armmp
  fetch "linux-image-$akver" busybox-static -- "${o[@]}"
  akroot=$cache/arm-$akver
  if [ ! -f "$akroot/.unpacked" ]; then
    say "unpack $akver"
    rm -rf "$akroot"; mkdir -p "$akroot"
    dpkg-deb -x "$(compgen -G "$cache/debs/linux-image-${akver}_*.deb" | head -1)" "$akroot"
    dpkg-deb -x "$(compgen -G "$cache/debs/busybox-static_*_armhf.deb" | head -1)" "$akroot/busybox"
    touch "$akroot/.unpacked"
  fi
}

# arm_monitor LOG SOCK: the host's side of the run: set the tmp105's
# temperature as the guest asks ("HIL WANT tmp0 temperature N", in order),
# quit QEMU when the guest is done.
arm_monitor() {
  local log=$1 sock=$2 done=0 want n
  for _ in $(seq 3000); do
    mapfile -t want < <(grep -a '^HIL WANT tmp0 temperature' "$log" 2>/dev/null | tr -d '\r')
    while [ "$done" -lt "${#want[@]}" ]; do
      n=${want[$done]##* }
      echo "qom-set /machine/peripheral/tmp0 temperature $n" | socat -t 1 - "UNIX-CONNECT:$sock" >/dev/null 2>&1 || break
      echo "HIL HOST set tmp0 temperature $n" >&2
      done=$((done + 1))
    done
    if grep -aq '^HIL EXIT' "$log" 2>/dev/null; then
      sleep 1; echo quit | socat -t 1 - "UNIX-CONNECT:$sock" >/dev/null 2>&1 || true; return
    fi
    sleep 0.2
  done
}

hil_arm() {
  command -v qemu-system-arm >/dev/null || unavailable "no qemu-system-arm"
  local t0=$SECONDS
  arm_kernel || return 1
  local work=$cache/run-arm
  rm -rf "$work"; mkdir -p "$work/root/hil"
  build arm 7
  local r=$work/root/hil m
  for m in i2c-dev busses/i2c-versatile; do cp "$akroot/lib/modules/$akver/kernel/drivers/i2c/$m.ko" "$r/"; done
  echo "i2c-dev.ko i2c-versatile.ko" >"$r/modules"
  cp "$cache/bin/arm/promcp-device" "$cache/bin/arm/hilrun" scripts/hil.d/arm.yml scripts/hil.d/hil-arm.policy.yml "$r/"
  cp scripts/hil.d/init-arm "$work/root/init"; chmod +x "$work/root/init"
  initramfs "$work/root" "$work/initrd.gz" "$akroot/busybox/bin/busybox"
  "$cache/bin/hilrun-host" sht3x-eeprom "$work/sht3x.bin"
  say "prepared in $((SECONDS - t0))s; boot $akver on vexpress-a9 (TCG)"
  local log=$work/console.log sock=$work/monitor.sock rc=0
  : >"$log"
  arm_monitor "$log" "$sock" &
  local mon=$!
  QEMU_AUDIO_DRV=none run_vm "$log" 300 qemu-system-arm -M vexpress-a9 -m 512 -display none -no-reboot -serial stdio \
    -monitor "unix:$sock,server=on,wait=off" \
    -kernel "$akroot/boot/vmlinuz-$akver" -dtb "$akroot/usr/lib/linux-image-$akver/vexpress-v2p-ca9.dtb" \
    -initrd "$work/initrd.gz" -append "console=ttyAMA0 quiet panic=-1 rdinit=/init" \
    -device tmp105,id=tmp0,bus=i2c,address=0x48 \
    -drive "if=none,id=sht,file=$work/sht3x.bin,format=raw" -device at24c-eeprom,bus=i2c,address=0x44,drive=sht,rom-size=65536 || rc=1
  kill "$mon" 2>/dev/null || true; wait "$mon" 2>/dev/null || true
  say "arm: $((SECONDS - t0))s in all"
  return $rc
}
