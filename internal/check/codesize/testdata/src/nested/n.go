package nested

func Hidden() {}
