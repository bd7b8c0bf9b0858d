package durable

func runWorkerChild() {}
