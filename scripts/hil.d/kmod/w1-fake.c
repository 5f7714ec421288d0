// SPDX-License-Identifier: GPL-2.0
/*
 * w1-fake: a 1-Wire bus master without hardware that answers as three
 * DS18B20 thermometers, so that the kernel's wire and w1_therm drivers can
 * be exercised in a virtual machine:
 *   28-000000000001 reads temp1 (millidegrees, a writable module parameter),
 *   28-000000000002 reads the power-on value, 85 degrees,
 *   28-000000000003 answers a scratchpad whose CRC is wrong.
 * It implements the byte-level commands w1_therm uses: match/skip ROM,
 * convert T, read power supply and read scratchpad; search is answered
 * from the ROM list.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/w1.h>

static int temp1 = 23125;
module_param(temp1, int, 0644);
MODULE_PARM_DESC(temp1, "temperature of 28-000000000001, millidegrees C");

#define NDEV 3

u8 w1_calc_crc8(u8 *data, int len);

enum state { ST_ROM, ST_MATCH, ST_FUNC, ST_READ };

static struct {
	enum state st;
	int sel;	/* the selected device */
	int nmatch;	/* ROM bytes received after match ROM */
	u8 rom[8];
	u8 out[9];	/* what reads return */
	int nout, pos, bit;
} bus;

static void rom_of(int i, u8 rom[8])
{
	memset(rom, 0, 8);
	rom[0] = 0x28;
	rom[1] = i + 1;
	rom[7] = w1_calc_crc8(rom, 7);
}

static void scratchpad(int i, u8 sp[9])
{
	s16 t = (s16)((temp1 * 16) / 1000);
	u8 base[8] = { 0, 0, 0x4b, 0x46, 0x7f, 0xff, 0x0c, 0x10 };

	if (i == 1)
		t = 85 * 16;
	memcpy(sp, base, 8);
	sp[0] = t & 0xff;
	sp[1] = (t >> 8) & 0xff;
	sp[6] = 0x10 - (t & 0x0f);
	sp[8] = w1_calc_crc8(sp, 8);
	if (i == 2)
		sp[8] ^= 0xff;
}

static u8 fake_reset(void *data)
{
	bus.st = ST_ROM;
	bus.sel = -1;
	return 0; /* presence */
}

static void fake_write(void *data, u8 b)
{
	int i;

	switch (bus.st) {
	case ST_ROM:
		if (b == W1_MATCH_ROM) {
			bus.st = ST_MATCH;
			bus.nmatch = 0;
		} else if (b == W1_SKIP_ROM) {
			bus.sel = 0;
			bus.st = ST_FUNC;
		}
		return;
	case ST_MATCH:
		bus.rom[bus.nmatch++] = b;
		if (bus.nmatch < 8)
			return;
		bus.st = ST_FUNC;
		for (i = 0; i < NDEV; i++) {
			u8 rom[8];

			rom_of(i, rom);
			if (!memcmp(rom, bus.rom, 8))
				bus.sel = i;
		}
		return;
	case ST_FUNC:
		bus.pos = 0;
		bus.bit = 0;
		bus.nout = 0;
		if (bus.sel < 0)
			return;
		if (b == 0xBE) {	/* read scratchpad */
			scratchpad(bus.sel, bus.out);
			bus.nout = 9;
		} else if (b == 0xB4) {	/* read power supply: external */
			bus.out[0] = 0xff;
			bus.nout = 1;
		}
		bus.st = ST_READ;
		return;
	case ST_READ:
		return;
	}
}

static u8 fake_read(void *data)
{
	if (bus.st == ST_READ && bus.pos < bus.nout)
		return bus.out[bus.pos++];
	return 0xff;
}

/*
 * touch_bit: w1_therm reads the power supply bit by bit (w1_read_bit). A
 * read slot returns the next bit of the reply, or 1 (externally powered,
 * conversion done); a write slot is ignored.
 */
static u8 fake_touch_bit(void *data, u8 bit)
{
	if (!bit)
		return 0;
	if (bus.st == ST_READ && bus.pos < bus.nout) {
		u8 b = bus.out[bus.pos] & 1;

		bus.out[bus.pos] = (bus.out[bus.pos] >> 1) | 0x80;
		if (++bus.bit == 8) {
			bus.bit = 0;
			bus.pos++;
		}
		return b;
	}
	return 1;
}

static void fake_search(void *data, struct w1_master *m, u8 type,
			w1_slave_found_callback cb)
{
	int i;

	for (i = 0; i < NDEV; i++) {
		u8 rom[8];
		u64 id = 0;

		rom_of(i, rom);
		memcpy(&id, rom, 8); /* little-endian: family in the low byte */
		cb(m, le64_to_cpu(id));
	}
}

static struct w1_bus_master master = {
	.reset_bus = fake_reset,
	.write_byte = fake_write,
	.read_byte = fake_read,
	.touch_bit = fake_touch_bit,
	.search = fake_search,
};

static int __init w1_fake_init(void)
{
	return w1_add_master_device(&master);
}

static void __exit w1_fake_exit(void)
{
	w1_remove_master_device(&master);
}

module_init(w1_fake_init);
module_exit(w1_fake_exit);
MODULE_DESCRIPTION("A 1-Wire master answering as DS18B20s, for tests");
MODULE_LICENSE("GPL");
