#pragma once
#include <QMainWindow>

namespace tandem::ui {

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
};

}  // namespace tandem::ui
