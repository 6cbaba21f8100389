package cli

func create(env Env, args []string) error { return nil }
