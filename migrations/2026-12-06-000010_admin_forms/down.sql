DROP TABLE admin_forms;
