package sim

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/promcp/promcp-device/internal/positive"
	"github.com/promcp/promcp-device/manifests"
)

// Physics constants.
const (
	defaultLeak       = 2 * time.Hour
	defaultVent       = 10 * time.Minute
	defaultFan        = 5 * time.Minute
	defaultHeaterRate = 0.5 // °C per minute per heater

	// humidityPerDegree is how much RH falls per °C of warming, %/°C.
	humidityPerDegree = 4.0
	// ventHumidity is the RH that open vents pull the zone toward, %.
	ventHumidity = 50.0
	minHumidity  = 5.0
	maxHumidity  = 100.0

	maxStep  = time.Second // longest integration step, simulated time
	maxSteps = 100000      // per advance; longer gaps take longer steps
)

// zone is one volume of air. All fields are guarded by World.mu.
type zone struct {
	cfg manifests.Zone // defaults applied

	t float64 // temperature, °C
	// h is the relative humidity before clamping, %: warming and cooling
	// in place move it by humidityPerDegree, open vents pull it toward
	// ventHumidity.
	h    float64
	last time.Time

	heaters, vents []*pinState
	fans           []*ModbusSlave
	rng            *rand.Rand
}

func newZone(cfg manifests.Zone, now time.Time, rng *rand.Rand) *zone {
	cfg.LeakTimeConstant = positive.Or(cfg.LeakTimeConstant, defaultLeak)
	cfg.VentTimeConstant = positive.Or(cfg.VentTimeConstant, defaultVent)
	cfg.FanTimeConstant = positive.Or(cfg.FanTimeConstant, defaultFan)
	if cfg.HeaterRate == 0 {
		cfg.HeaterRate = defaultHeaterRate
	}
	return &zone{cfg: cfg, t: cfg.Temperature, h: cfg.Humidity, last: now, rng: rng}
}

// humidity is the zone's current relative humidity, %.
func (z *zone) humidity() float64 {
	return clamp(z.h, minHumidity, maxHumidity)
}

// advance integrates the zone from its last update to now, with the heaters
// and vents as they are (they change only after an advance).
func (z *zone) advance(now time.Time) {
	total := now.Sub(z.last)
	if total <= 0 {
		return
	}
	z.last = now

	heaters, vents := 0, 0
	for _, p := range z.heaters {
		if p.on() {
			heaters++
		}
	}
	for _, p := range z.vents {
		if p.on() {
			vents++
		}
	}
	heat := float64(heaters) * z.cfg.HeaterRate / 60 // °C/s
	kLeak := 1 / z.cfg.LeakTimeConstant.Seconds()    // 1/s
	kVent := float64(vents) / z.cfg.VentTimeConstant.Seconds()
	for _, f := range z.fans {
		kVent += f.fanFraction() / z.cfg.FanTimeConstant.Seconds()
	}
	k := kLeak + kVent
	tEq := z.cfg.Outside + heat/k // where T would settle, °C

	steps := min(int64(math.Ceil(float64(total)/float64(maxStep))), maxSteps)
	dt := total.Seconds() / float64(steps)
	decay, ventDecay := math.Exp(-k*dt), math.Exp(-kVent*dt)
	for range steps {
		// Exact for constant inputs over the step, so stable at any dt.
		t := tEq + (z.t-tEq)*decay
		// The share of the change due to heating and leaking changes the
		// air in place and moves RH; the vents' share replaces air.
		inPlace := heat + kLeak*(z.cfg.Outside-z.t)
		if all := inPlace + kVent*(z.cfg.Outside-z.t); all != 0 {
			z.h -= humidityPerDegree * (t - z.t) * inPlace / all
		}
		z.t = t
		if kVent > 0 {
			z.h = ventHumidity + (z.h-ventHumidity)*ventDecay
		}
	}
}

// sample returns a noisy measurement of the zone, advanced to now.
func (z *zone) sample(now time.Time) (t, rh float64) {
	z.advance(now)
	t, rh = z.t, z.humidity()
	if n := z.cfg.Noise; n > 0 {
		t += z.rng.NormFloat64() * n
		rh += z.rng.NormFloat64() * n * 10
	}
	return t, clamp(rh, 0, 100)
}

func clamp(v, lo, hi float64) float64 {
	return math.Max(lo, math.Min(hi, v))
}
