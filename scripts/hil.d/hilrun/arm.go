package main

func (s *suite) i2c() {
	s.check("i2c/todo", false, "not written yet")
}
