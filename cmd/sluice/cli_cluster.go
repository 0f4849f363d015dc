package main

import "fmt"

func runCluster(c *cli, args []string) error {
	if len(args) > 0 && args[0] == "health" {
		return clusterHealth(c, args[1:])
	}
	if len(args) == 0 || args[0] != "info" {
		return usagef("cluster wants info or health")
	}
	fs := c.flags("cluster info", "table", "json")
	_, adm, ctx, err := c.start(fs, args[1:], noArgs)
	if err != nil {
		return err
	}
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return err
	}
	type broker struct {
		NodeID     int32  `json:"node_id"`
		Host       string `json:"host"`
		Port       int32  `json:"port"`
		Rack       string `json:"rack,omitempty"`
		Controller bool   `json:"controller"`
	}
	brokers := []broker{}
	for _, b := range md.Brokers {
		br := broker{NodeID: b.NodeID, Host: b.Host, Port: b.Port, Controller: b.NodeID == md.Controller}
		if b.Rack != nil {
			br.Rack = *b.Rack
		}
		brokers = append(brokers, br)
	}
	if c.output == "json" {
		return c.json(map[string]any{"cluster_id": md.Cluster, "controller": md.Controller, "brokers": brokers})
	}
	fmt.Fprintf(c.out, "cluster %s, controller %d, %d brokers\n\n", md.Cluster, md.Controller, len(brokers))
	var rows [][]string
	for _, b := range brokers {
		ctrl := ""
		if b.Controller {
			ctrl = "*"
		}
		rows = append(rows, []string{fmt.Sprint(b.NodeID), b.Host, fmt.Sprint(b.Port), b.Rack, ctrl})
	}
	return c.table([]string{"NODE", "HOST", "PORT", "RACK", "CONTROLLER"}, rows)
}
