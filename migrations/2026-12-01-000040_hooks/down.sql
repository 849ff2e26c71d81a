DROP TABLE inbound_quarantine;
DROP TABLE inbound_conflicts;
DROP TABLE inbound_deliveries;
DROP TABLE inbound_events;
