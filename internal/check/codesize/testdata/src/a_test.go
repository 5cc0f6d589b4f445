package src

func InTest() {}
