// SPDX-License-Identifier: GPL-2.0
/*
 * pwm-dummy: a PWM chip with two channels and no hardware, so that the
 * kernel's PWM sysfs interface (/sys/class/pwm) can be exercised in a
 * virtual machine. It keeps the state the core applies and reports it back.
 */
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/pwm.h>

static struct platform_device *pdev;
static struct pwm_chip chip;
static struct pwm_state states[2];

static int dummy_apply(struct pwm_chip *c, struct pwm_device *pwm,
		       const struct pwm_state *state)
{
	states[pwm->hwpwm] = *state;
	return 0;
}

static int dummy_get_state(struct pwm_chip *c, struct pwm_device *pwm,
			   struct pwm_state *state)
{
	*state = states[pwm->hwpwm];
	return 0;
}

static const struct pwm_ops dummy_ops = {
	.apply = dummy_apply,
	.get_state = dummy_get_state,
	.owner = THIS_MODULE,
};

static int __init pwm_dummy_init(void)
{
	int ret;

	pdev = platform_device_register_simple("pwm-dummy", -1, NULL, 0);
	if (IS_ERR(pdev))
		return PTR_ERR(pdev);
	chip.dev = &pdev->dev;
	chip.ops = &dummy_ops;
	chip.npwm = 2;
	ret = pwmchip_add(&chip);
	if (ret)
		platform_device_unregister(pdev);
	return ret;
}

static void __exit pwm_dummy_exit(void)
{
	pwmchip_remove(&chip);
	platform_device_unregister(pdev);
}

module_init(pwm_dummy_init);
module_exit(pwm_dummy_exit);
MODULE_DESCRIPTION("A PWM chip without hardware, for tests");
MODULE_LICENSE("GPL");
