package task_test

import "github.com/loomkit/loom/session"

func sessionKeyOf(app, user, id string) session.Key {
	return session.Key{AppName: app, UserID: user, SessionID: id}
}
