// tandem: the desktop app.
#include <QApplication>

#include "main_window.h"

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setApplicationName("Tandem");
    QApplication::setOrganizationName("Tandem");
    tandem::ui::MainWindow window;
    window.show();
    return app.exec();
}
