package sub

func Closure() func() {
	return func() {
		_ = 1
		_ = 2
	}
}
